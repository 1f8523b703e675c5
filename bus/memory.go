package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// maxCachedRoutes bounds the per-topic route cache of one subscription
// snapshot; topics past it are matched on every publish.
const maxCachedRoutes = 4096

// Memory is the embedded backend: everything lives in the process.
type Memory struct {
	opts       Options
	clock      Clock
	retained   []pattern
	appendOnly []pattern
	idPrefix   string
	ids        atomic.Uint64

	// mu guards subs, nextSub and replacing snap.
	mu      sync.Mutex
	subs    []*memSub // oldest first
	nextSub uint64
	snap    atomic.Pointer[snapshot]

	closed atomic.Bool
	ctx    context.Context // cancelled by Close; handlers of Publish get it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// deadlines times the calls of cooperative subscriptions.
	deadlines *deadlines

	storeMu sync.Mutex
	last    map[string]Message
	logs    map[string]*memLog
	// storeBytes is what last and logs hold, by storedSize.
	storeBytes int64

	idemMu    sync.Mutex
	idem      map[string]time.Time
	idemOrder []idemEntry

	dlqMu  sync.Mutex
	dlq    []DeadLetter
	dlqSub map[string]*memSub
}

var _ Bus = (*Memory)(nil)

// snapshot is an immutable view of the subscription list with a cache of
// the routes computed from it; a subscription change installs a new one.
type snapshot struct {
	subs []*memSub
	// hot is the last route looked up: publishers in a loop on one topic
	// skip the map.
	hot atomic.Pointer[route]
	// routes caches the routes of up to maxCachedRoutes topics.
	routes  sync.Map // string -> *route
	nroutes atomic.Int32
}

func newSnapshot(subs []*memSub) *snapshot { return &snapshot{subs: subs} }

// route is what the bus does with one topic.
type route struct {
	topic      string
	subs       []*memSub // newest first, superseded ones left out
	retained   bool
	appendOnly bool
}

type idemEntry struct {
	key string
	at  time.Time
}

type delivery struct {
	m    Message
	stop bool // tells the worker its subscription is gone
}

// NewMemory returns an in-process bus. It fails only on invalid options.
func NewMemory(opts Options) (*Memory, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	b := &Memory{
		opts:   opts,
		clock:  opts.Clock,
		last:   make(map[string]Message),
		logs:   make(map[string]*memLog),
		idem:   make(map[string]time.Time),
		dlqSub: make(map[string]*memSub),
	}
	for _, p := range opts.Retained {
		cp, _ := compilePattern(p) // validated above
		b.retained = append(b.retained, cp)
	}
	for _, p := range opts.AppendOnly {
		cp, _ := compilePattern(p)
		b.appendOnly = append(b.appendOnly, cp)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:]) // never fails; IDs stay unique within the bus anyway
	b.idPrefix = hex.EncodeToString(rnd[:]) + "-"
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.deadlines = newDeadlines(b.clock, b.ctx.Done())
	b.snap.Store(newSnapshot(nil))
	return b, nil
}

// Options returns the options in effect, defaults filled in.
func (b *Memory) Options() Options { return b.opts }

// stamp fills an empty ID and a zero Time.
func (b *Memory) stamp(m *Message) {
	if m.ID == "" {
		m.ID = b.newID()
	}
	if m.Time.IsZero() {
		m.Time = b.clock.Now()
	}
}

func (b *Memory) newID() string {
	var buf [32]byte
	n := copy(buf[:], b.idPrefix)
	return string(strconv.AppendUint(buf[:n], b.ids.Add(1), 36))
}

// route returns the route for topic, from the cache when it can.
func (b *Memory) route(topic string) (*route, error) {
	snap := b.snap.Load()
	if r := snap.hot.Load(); r != nil && r.topic == topic {
		return r, nil
	}
	if v, ok := snap.routes.Load(topic); ok {
		r := v.(*route)
		snap.hot.Store(r)
		return r, nil
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, err
	}
	r := &route{topic: topic, retained: matchAny(b.retained, topic), appendOnly: matchAny(b.appendOnly, topic)}
	var seen map[string]struct{}
	everyone := IsBroadcast(topic)
	for i := len(snap.subs) - 1; i >= 0; i-- {
		s := snap.subs[i]
		if !s.pat.match(topic) {
			continue
		}
		if everyone || s.observer {
			r.subs = append(r.subs, s) // no supersession either way
			continue
		}
		if _, dup := seen[s.pat.raw]; dup {
			continue // superseded by a newer identical pattern
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		seen[s.pat.raw] = struct{}{}
		r.subs = append(r.subs, s)
	}
	if snap.nroutes.Add(1) <= maxCachedRoutes {
		snap.routes.Store(topic, r)
	}
	return r, nil
}

func matchAny(ps []pattern, topic string) bool {
	for _, p := range ps {
		if p.match(topic) {
			return true
		}
	}
	return false
}

// prepare validates m, stamps its ID and time when asked to or when the
// message is kept, drops duplicates and stores it on retained and
// append-only topics.
func (b *Memory) prepare(m *Message, stamp bool, res *Result) (*route, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	r, err := b.route(m.Topic)
	if err != nil {
		return nil, err
	}
	if stamp || r.retained || r.appendOnly {
		b.stamp(m)
	}
	res.MessageID = m.ID
	if m.IdempotencyKey != "" && b.duplicate(m.Topic, m.IdempotencyKey) {
		res.Duplicate = true
		return nil, nil
	}
	if r.retained || r.appendOnly {
		if res.Offset, err = b.store(r, *m); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Listened reports whether a message on topic would reach anyone: a
// subscriber whose pattern matches it, or the store of a retained or
// append-only topic. A caller that must encode a message first can skip
// one that would reach nobody; a subscriber that comes after this call
// misses it, as it misses any message sent before it subscribed.
func (b *Memory) Listened(topic string) bool {
	if b.closed.Load() {
		return false
	}
	r, err := b.route(topic)
	if err != nil {
		// An invalid topic is the send's to refuse.
		return true
	}
	if r.retained || r.appendOnly {
		return true
	}
	for _, s := range r.subs {
		if !s.removed.Load() {
			return true
		}
	}
	return false
}

// Publish implements Bus.
func (b *Memory) Publish(ctx context.Context, m Message) (res Result, err error) {
	r, err := b.prepare(&m, false, &res)
	if r == nil {
		return res, err
	}
	for _, s := range r.subs {
		if s.accept != nil && !s.accept(m) {
			continue
		}
		switch s.enqueue(ctx, &m) {
		case enqueued:
			res.Delivered++
		case deadLettered:
			res.DeadLettered = true
		}
	}
	return res, nil
}

// duplicate records the key and reports whether it was seen in the window.
func (b *Memory) duplicate(topic, key string) bool {
	now := b.clock.Now()
	k := topic + "\x00" + key
	b.idemMu.Lock()
	defer b.idemMu.Unlock()
	n := 0
	for n < len(b.idemOrder) && now.Sub(b.idemOrder[n].at) >= b.opts.IdempotencyWindow {
		e := b.idemOrder[n]
		if b.idem[e.key].Equal(e.at) {
			delete(b.idem, e.key)
		}
		n++
	}
	b.idemOrder = b.idemOrder[n:]
	if at, ok := b.idem[k]; ok && now.Sub(at) < b.opts.IdempotencyWindow {
		return true
	}
	b.idem[k] = now
	b.idemOrder = append(b.idemOrder, idemEntry{key: k, at: now})
	return false
}

// Close implements Bus.
func (b *Memory) Close() error {
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		return nil
	}
	b.closed.Store(true)
	subs := b.subs
	b.subs = nil
	b.publishSnapshot()
	b.mu.Unlock()
	b.cancel()
	for _, s := range subs {
		s.stop()
	}
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-b.clock.After(b.opts.RequestTimeout):
		return fmt.Errorf("close bus: some handlers did not return within %s of their context being cancelled", b.opts.RequestTimeout)
	}
}
