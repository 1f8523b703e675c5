package natsbus_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
)

// TestServerRestartDuringDurablePublishes restarts the NATS server while
// 10,000 append-only messages are published: each is stored exactly once,
// in order, and publishing a key again inside the window is a duplicate.
func TestServerRestartDuringDurablePublishes(t *testing.T) {
	const n = 10_000
	ns := bustest.StartNATS(t)
	b := newBus(t, ns.URL(), bus.Options{AppendOnly: []string{"loop:anchor"}, RequestTimeout: 30 * time.Second})
	defer b.Close()
	ctx := context.Background()

	var published atomic.Int64
	type restart struct {
		at  int64
		err error
	}
	restarted := make(chan restart, 1)
	// The restarter never touches t: it may still run when a failed
	// publish ends the test, so cleanup (before the server's own) stops it
	// and waits.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(func() { close(stop); wg.Wait() })
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for published.Load() < n/3 {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
		ns.Stop()
		err := ns.TryStart()
		restarted <- restart{published.Load(), err}
	}()
	for i := range n {
		m := bus.Message{Topic: "loop:anchor", IdempotencyKey: strconv.Itoa(i), Payload: json.RawMessage(`{"type":"anchor","n":` + strconv.Itoa(i) + `}`)}
		res, err := b.Publish(ctx, m)
		if err != nil {
			t.Fatalf("Publish #%d = %v, want nil: the bus retries through a restart", i, err)
		}
		if res.Duplicate {
			t.Fatalf("Publish #%d reported a duplicate, want a new message", i)
		}
		published.Add(1)
	}
	switch r := bustest.Recv(t, "the server restart to finish", restarted); {
	case r.err != nil:
		t.Fatalf("restart the server: %v", r.err)
	case r.at >= n:
		t.Fatalf("the server came back after all %d publishes, want it restarted during them", n)
	}

	// Re-sending recent keys inside the idempotency window stores nothing.
	for i := n - 100; i < n; i++ {
		res, err := b.Publish(ctx, bus.Message{Topic: "loop:anchor", IdempotencyKey: strconv.Itoa(i), Payload: json.RawMessage(`{"type":"anchor"}`)})
		if err != nil || !res.Duplicate {
			t.Fatalf("re-Publish key %d = %+v, %v, want a duplicate", i, res, err)
		}
	}

	seen := make([]int, 0, n)
	err := b.Replay(ctx, "loop:anchor", 1, func(off uint64, m bus.Message) bool {
		k, _ := strconv.Atoi(m.IdempotencyKey)
		seen = append(seen, k)
		return true
	})
	if err != nil {
		t.Fatalf("Replay = %v", err)
	}
	if len(seen) != n {
		t.Fatalf("stored %d messages, want %d (none lost, none duplicated)", len(seen), n)
	}
	for i, k := range seen {
		if k != i {
			t.Fatalf("offset %d holds key %d, want %d", i+1, k, i)
		}
	}
}
