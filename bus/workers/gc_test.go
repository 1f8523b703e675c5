package workers_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/internal/gitwork"
)

// missing reports whether the bundle store holds nothing under name.
func missing(t *testing.T, s *workers.Store, name string) bool {
	t.Helper()
	_, err := s.Get(context.Background(), name)
	if err != nil && !errors.Is(err, workers.ErrMissing) {
		t.Fatal(err)
	}
	return errors.Is(err, workers.ErrMissing)
}

// TestTakenBackAwardLeavesNothing: a worker finishes a task whose award
// was taken back meanwhile (the call was cancelled) and stores its result
// and its log anyway; its result is refused, and the store keeps neither,
// nor the base bundle no lease names anymore.
func TestTakenBackAwardLeavesNothing(t *testing.T) {
	w := newWorldWindow(t, 30*time.Second, 150*time.Millisecond)
	started := make(chan string, 1)
	held := make(chan struct{})
	w.join("slow", nil, func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, log io.Writer) (string, error) {
		started <- a.Award
		<-held
		// It goes on as if nothing happened: its lease is not renewed
		// before the next heartbeat, a third of the lease away.
		return commitTask("slow")(context.WithoutCancel(ctx), r, a, log)
	})
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := w.coord.Offer(ctx, w.offer(1, workers.Needs{}))
		done <- err
	}()
	award := <-started
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled offer returned no error")
	}
	close(held)
	for deadline := time.Now().Add(10 * time.Second); w.count("work.refused", "slow") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the result of the award taken back was never refused")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := newBus(t, w.ns.URL())
	s, err := workers.OpenStore(context.Background(), b.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"result-" + award, "log-" + award} {
		if !missing(t, s, name) {
			t.Errorf("the store still holds %s once its result was refused", name)
		}
	}
	// The base goes once the Offer is over, away from its path.
	for deadline := time.Now().Add(10 * time.Second); !missing(t, s, "base-"+w.base); {
		if time.Now().After(deadline) {
			t.Fatal("the store still holds the base no lease names")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClosedCoordinatorLeavesNothing: the objects of a finished run (its
// base, its results, its logs) are gone once its coordinator closes, and
// a result taken is gone at once.
func TestClosedCoordinatorLeavesNothing(t *testing.T) {
	w := newWorld(t, 5*time.Second)
	w.join("plain", nil, commitTask("plain"))
	ctx := ctxT(t)
	res, err := w.coord.Offer(ctx, w.offer(1, workers.Needs{}))
	if err != nil {
		t.Fatal(err)
	}
	b := newBus(t, w.ns.URL())
	s, err := workers.OpenStore(ctx, b.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	if !missing(t, s, "result-"+res.Award) {
		t.Error("a result taken is still stored")
	}
	if err := w.coord.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"result-" + res.Award, "log-" + res.Award, "base-" + w.base} {
		if !missing(t, s, name) {
			t.Errorf("the store still holds %s after the run", name)
		}
	}
}
