package workers_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/collab"
	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/internal/gitwork"
)

// TestDeclinesDoNotSpin: when every live worker declines at once, the call
// ends at once too, and the task is offered again only after the window,
// not in a loop as fast as the bus answers.
func TestDeclinesDoNotSpin(t *testing.T) {
	const window = 200 * time.Millisecond
	w := newWorldWindow(t, 5*time.Second, window)
	w.join("plain", nil, commitTask("plain"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*window)
	defer cancel()
	if _, err := w.coord.Offer(ctx, w.offer(1, workers.Needs{Labels: []string{"gpu"}})); err == nil {
		t.Fatal("a task nobody can take was run")
	}
	if n := w.count("work.offered", ""); n > 7 {
		t.Fatalf("the task was offered %d times in %s with a window of %s", n, 5*window, window)
	}
	if n := w.count("work.awarded", ""); n != 0 {
		t.Fatalf("%d awards of a task nobody can take", n)
	}
}

// lagBus is a worker's bus whose view of the subscriptions lags: the first
// request on each reply topic of a call for proposals reaches nobody, as
// one does when the coordinator's subscription to it has not yet come
// through the subscription registry.
type lagBus struct {
	collab.Bus
	mu   sync.Mutex
	seen map[string]bool
	lost atomic.Int32
}

func (b *lagBus) Request(ctx context.Context, m bus.Message) (bus.Result, error) {
	if strings.HasPrefix(m.Topic, "thread.offer-") {
		b.mu.Lock()
		first := !b.seen[m.Topic]
		b.seen[m.Topic] = true
		b.mu.Unlock()
		if first {
			b.lost.Add(1)
			return bus.Result{}, nil
		}
	}
	return b.Bus.Request(ctx, m)
}

// TestBidThatReachedNobodyIsSentAgain: a bid sent before the worker's bus
// knew of the coordinator's fresh subscription to the call reaches nobody;
// it is sent again, so the call still closes as soon as every worker has
// answered instead of waiting out its window.
func TestBidThatReachedNobodyIsSentAgain(t *testing.T) {
	const window = 20 * time.Second
	w := newWorldWindow(t, 5*time.Second, window)
	b := newBus(t, w.ns.URL())
	lag := &lagBus{Bus: b, seen: map[string]bool{}}
	a, err := workers.Join(context.Background(), lag, b.JetStream(), newRepo(t, false), workers.Info{Name: "gpu", Labels: []string{"gpu"}, Slots: 1}, commitTask("gpu"), workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), window/2)
	defer cancel()
	res, err := w.coord.Offer(ctx, w.offer(1, workers.Needs{Labels: []string{"gpu"}}))
	if err != nil {
		t.Fatalf("the call did not close once its one worker had bid (its first bid reached nobody): %v", err)
	}
	if res.Worker != "gpu" || lag.lost.Load() == 0 {
		t.Fatalf("task ran on %q with %d bids lost, want gpu after a lost bid", res.Worker, lag.lost.Load())
	}
}

// TestOneOfferOfATaskAtOnce: a task's lease is one per task, so a second
// offer of a task still on offer would take the lease from the first, and
// each would take it back from the other without end. The second is
// refused at once, and the first goes on to land its result.
func TestOneOfferOfATaskAtOnce(t *testing.T) {
	w := newWorld(t, 5*time.Second)
	started := make(chan struct{})
	held := make(chan struct{})
	var once sync.Once
	w.join("one", nil, func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, log io.Writer) (string, error) {
		once.Do(func() { close(started) })
		select {
		case <-held:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return commitTask("one")(ctx, r, a, log)
	})
	ctx := ctxT(t)
	first := make(chan error, 1)
	go func() {
		_, err := w.coord.Offer(ctx, w.offer(1, workers.Needs{}))
		first <- err
	}()
	<-started
	if _, err := w.coord.Offer(ctx, w.offer(1, workers.Needs{})); err == nil || !strings.Contains(err.Error(), "on offer already") {
		t.Fatalf("a second offer of a task on offer = %v, want refused", err)
	}
	close(held)
	if err := <-first; err != nil {
		t.Fatalf("the first offer after the second was refused: %v", err)
	}
	if n := w.count("work.awarded", ""); n != 1 {
		t.Fatalf("task 1 was awarded %d times, want once", n)
	}
}
