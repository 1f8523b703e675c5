package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/workers"
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
