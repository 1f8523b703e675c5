// Package bustest helps test code built on the bus: the conformance suite
// every backend passes (Run), a recording handler, a fake clock that drives
// retry delays and timeouts without real waiting, and WaitFor.
//
// A backend runs the suite from its own test:
//
//	func TestConformance(t *testing.T) {
//		bustest.Run(t, func(t *testing.T, opts bus.Options) bus.Bus {
//			b, err := nats.New(ctx, url, opts) // a fresh bus per subtest
//			if err != nil {
//				t.Fatal(err)
//			}
//			return b
//		})
//	}
//
// The suite passes Options with a FakeClock in some subtests: the backend
// must read every delay and timeout (retry delays, request and enqueue
// timeouts, the idempotency window) from Options.Clock. It closes each bus
// itself, so Close must be safe to call twice.
package bustest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
)

// Deadline guards every wait in this package against hanging forever. It is
// a failure guard, never a timing assertion: generous enough that only a
// real failure reaches it on a busy machine.
const Deadline = time.Minute

// WaitFor waits until cond is true, failing the test with what when it is
// not after Deadline.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	guard := time.NewTimer(Deadline)
	defer guard.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-guard.C:
			t.Fatalf("gave up after %s waiting for %s", Deadline, what)
		case <-tick.C:
		}
	}
}

// Recv receives one value from ch, failing the test with what after
// Deadline.
func Recv[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Deadline):
		t.Fatalf("gave up after %s waiting for %s", Deadline, what)
		var zero T
		return zero
	}
}

// Recorder is a handler that records what it receives and answers with a
// fixed ack, or with the answer of its Respond function.
type Recorder struct {
	// Respond, if set before use, computes the answer to each message.
	Respond func(ctx context.Context, m bus.Message) (bus.Ack, error)

	ack    bus.Ack
	mu     sync.Mutex
	msgs   []bus.Message
	notify chan struct{}
}

// NewRecorder returns a recorder answering every message with ack.
func NewRecorder(ack bus.Ack) *Recorder {
	return &Recorder{ack: ack, notify: make(chan struct{})}
}

// Processed returns a recorder that acks every message as processed.
func Processed() *Recorder { return NewRecorder(bus.Ack{Processed: true}) }

// Handle is the bus.Handler.
func (r *Recorder) Handle(ctx context.Context, m bus.Message) (bus.Ack, error) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	close(r.notify)
	r.notify = make(chan struct{})
	r.mu.Unlock()
	if r.Respond != nil {
		return r.Respond(ctx, m)
	}
	return r.ack, nil
}

// Messages returns a copy of what was received, in order.
func (r *Recorder) Messages() []bus.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// Len returns how many messages were received.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

// WaitN waits until at least n messages were received and returns them.
func (r *Recorder) WaitN(t testing.TB, n int) []bus.Message {
	t.Helper()
	guard := time.NewTimer(Deadline)
	defer guard.Stop()
	for {
		r.mu.Lock()
		got, ch := len(r.msgs), r.notify
		if got >= n {
			out := slices.Clone(r.msgs)
			r.mu.Unlock()
			return out
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-guard.C:
			t.Fatalf("recorder got %d messages after %s, want %d", got, Deadline, n)
			return nil
		}
	}
}

// FakeClock is a bus.Clock whose time moves only when Advance is called.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{}
}

type fakeTimer struct {
	at time.Time
	d  time.Duration
	ch chan time.Time
}

var _ bus.Clock = (*FakeClock)(nil)

// NewFakeClock returns a fake clock reading start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that fires once the clock has been advanced by d.
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, &fakeTimer{at: c.now.Add(d), d: d, ch: ch})
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// Advance moves the clock forward by d and fires the timers that are due.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(c.now) {
			kept = append(kept, tm)
			continue
		}
		tm.ch <- c.now
	}
	clear(c.timers[len(kept):])
	c.timers = kept
	close(c.changed)
	c.changed = make(chan struct{})
}

// Pending returns the durations of the timers not fired yet.
func (c *FakeClock) Pending() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Duration, len(c.timers))
	for i, tm := range c.timers {
		out[i] = tm.d
	}
	return out
}

// WaitForTimer waits until a timer of duration d is pending, so the test
// knows the code under test is waiting on it before calling Advance.
func (c *FakeClock) WaitForTimer(t testing.TB, d time.Duration) {
	t.Helper()
	guard := time.NewTimer(Deadline)
	defer guard.Stop()
	for {
		c.mu.Lock()
		found := false
		for _, tm := range c.timers {
			if tm.d == d {
				found = true
				break
			}
		}
		ch := c.changed
		c.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ch:
		case <-guard.C:
			t.Fatalf("no %s timer after %s; pending: %v", d, Deadline, c.Pending())
			return
		}
	}
}

// ProtectedSpellings are patterns that a peer without the bus token must
// not hold: each is spelled away from hook:, agent: or system: (fnmatch
// escapes, classes, ?), and each matches topics there (issue 23).
var ProtectedSpellings = []string{
	`\hook:*`, `h\ook:*`, `\h\o\o\k\:*`, `\hook:tool.execute.before`, `[h]ook:*`, `?ook:*`,
	`\agent:*`, `\a\gent:tapestry`, `\system:*`, `\system:dead-letter`, `hook\:`,
}
