package workers

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// live follows the worker registry so that a call for proposals can close
// as soon as every live worker has answered, instead of waiting out its
// window. It keeps, per worker name, when this process last saw its entry
// written (its own clock, not the worker's): an entry not renewed for
// registryAge counts no more, as the bucket forgets it then too.
type live struct {
	mu   sync.Mutex
	seen map[string]time.Time
	now  func() time.Time
	stop func() error
}

// watchLive starts following the registry bucket; it ends with ctx or
// stop. A watch that breaks (NATS restarting) only makes calls wait their
// whole window.
func watchLive(ctx context.Context, js jetstream.JetStream, now func() time.Time) (*live, error) {
	reg, err := OpenRegistry(ctx, js)
	if err != nil {
		return nil, err
	}
	w, err := reg.kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("follow bucket %s: %w", WorkerBucket, err)
	}
	l := &live{seen: map[string]time.Time{}, now: now, stop: w.Stop}
	go func() {
		for e := range w.Updates() {
			if e == nil {
				continue // the entries present when the watch began are in
			}
			l.mu.Lock()
			if e.Operation() == jetstream.KeyValuePut {
				l.seen[e.Key()] = l.now()
			} else {
				delete(l.seen, e.Key())
			}
			l.mu.Unlock()
		}
	}()
	return l, nil
}

// answered reports whether every live worker is among senders (their
// "agent.<name>" ids); false while no worker is known.
func (l *live) answered(senders map[string]bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	n := 0
	for name, at := range l.seen {
		if now.Sub(at) > registryAge {
			continue
		}
		if !senders["agent."+name] {
			return false
		}
		n++
	}
	return n > 0
}

// isLive reports whether the worker name is seen live.
func (l *live) isLive(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.seen[name]
	return ok && l.now().Sub(at) <= registryAge
}

// names lists the workers seen live, sorted.
func (l *live) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var out []string
	for name, at := range l.seen {
		if now.Sub(at) <= registryAge {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
