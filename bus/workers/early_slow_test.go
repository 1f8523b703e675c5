//go:build slow

package workers_test

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/internal/gitwork"
)

// The early close is measured against a bid window of 20 s, on a machine
// that is not also building: it runs in the slow suite.

// TestSlowCallClosesOnceEveryWorkerAnswered: with a bid window far longer than
// the test, a call for proposals still ends at once when no better bid can
// come. The first task goes to the one idle worker that fits (a bid with
// every slot free); the second, while that worker is half busy, closes
// when every live worker has answered: the one that cannot take it
// declines, and a decline is never awarded.
func TestSlowCallClosesOnceEveryWorkerAnswered(t *testing.T) {
	const window = 20 * time.Second
	w := newWorldWindow(t, 5*time.Second, window)
	started := make(chan string, 1)
	held := make(chan struct{})
	first := true
	gpu := func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, log io.Writer) (string, error) {
		if first {
			first = false
			started <- a.Award
			select {
			case <-held:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return commitTask("gpu")(ctx, r, a, log)
	}
	w.join("plain", nil, commitTask("plain")) // declines: no gpu
	w.join("gpu", []string{"gpu"}, gpu)
	// A call closes once the workers the coordinator knows of answered:
	// both must be known, or plain's decline alone would close it.
	for deadline := time.Now().Add(10 * time.Second); !slices.Equal(w.coord.Live(), []string{"gpu", "plain"}); {
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator sees %v live, want gpu and plain", w.coord.Live())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx := ctxT(t)
	needs := workers.Needs{Labels: []string{"gpu"}}
	done := make(chan error, 1)
	go func() {
		_, err := w.coord.Offer(ctx, w.offer(1, needs))
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(window / 2):
		t.Fatal("the first task waited out the bid window although an idle worker bid at once")
	}
	begin := time.Now()
	res, err := w.coord.Offer(ctx, w.offer(2, needs))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > window/2 {
		t.Fatalf("the second task took %s: the call waited out its window although every worker had answered", took)
	}
	if res.Worker != "gpu" {
		t.Fatalf("task 2 went to %s, want gpu (plain declined)", res.Worker)
	}
	if res.Steps.Award <= 0 || res.Steps.Run <= 0 || res.Steps.Fetch <= 0 {
		t.Errorf("steps of task 2 not measured: %+v", res.Steps)
	}
	close(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := w.count("work.awarded", "plain"); n != 0 {
		t.Fatalf("plain, which declined, was awarded %d tasks", n)
	}
}
