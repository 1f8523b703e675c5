package bus

import (
	"context"
	"sync"
	"time"
)

// deadlines ends the contexts of cooperative handler calls that outlive
// their timeout, and of all of them when the bus closes.
//
// A timer per call would be simpler, but arming a timer when no other is
// pending wakes a sleeping thread to re-arm the poller, which costs more
// than a fast call. Here one goroutine, running only while calls are in
// flight, sleeps until the earliest deadline; a call whose deadline is not
// the earliest (the usual case: one timeout, calls in order) only takes a
// lock to register and one to leave.
type deadlines struct {
	clock Clock
	done  <-chan struct{} // the bus's context: closing ends every call

	mu      sync.Mutex
	calls   map[*deadlineCall]struct{}
	running bool      // the watch goroutine is up
	until   time.Time // when it next wakes, if running
	wake    chan struct{}
}

type deadlineCall struct {
	at     time.Time
	cancel context.CancelCauseFunc
}

func newDeadlines(clock Clock, done <-chan struct{}) *deadlines {
	return &deadlines{clock: clock, done: done, calls: make(map[*deadlineCall]struct{}), wake: make(chan struct{}, 1)}
}

// watch returns a context derived from ctx that ends with cause
// context.DeadlineExceeded after d, or ErrClosed when the bus closes, and
// the function that stops watching it, which must be called.
func (w *deadlines) watch(ctx context.Context, d time.Duration) (context.Context, func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	c := &deadlineCall{at: w.clock.Now().Add(d), cancel: cancel}
	w.mu.Lock()
	select {
	case <-w.done:
		w.mu.Unlock()
		cancel(ErrClosed)
		return cctx, func() {}
	default:
	}
	w.calls[c] = struct{}{}
	switch {
	case !w.running:
		w.running, w.until = true, c.at
		go w.run()
	case c.at.Before(w.until):
		w.until = c.at
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
	return cctx, func() {
		w.mu.Lock()
		delete(w.calls, c)
		w.mu.Unlock()
		cancel(nil)
	}
}

func (w *deadlines) run() {
	for {
		w.mu.Lock()
		now := w.clock.Now()
		var next time.Time
		for c := range w.calls {
			if !now.Before(c.at) {
				c.cancel(context.DeadlineExceeded)
				delete(w.calls, c)
				continue
			}
			if next.IsZero() || c.at.Before(next) {
				next = c.at
			}
		}
		if len(w.calls) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.until = next
		w.mu.Unlock()
		select {
		case <-w.clock.After(next.Sub(now)):
		case <-w.wake:
		case <-w.done:
			w.mu.Lock()
			for c := range w.calls {
				c.cancel(ErrClosed)
				delete(w.calls, c)
			}
			w.running = false
			w.mu.Unlock()
			return
		}
	}
}
