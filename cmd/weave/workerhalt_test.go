package main

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/run"
)

// TestWorkerStopsWhenItsGuardIsDown: once a hook whose failure policy is
// closed has failed in the worker's host, the task fails with why and the
// worker stops itself, as a run does, instead of taking task after task
// only to fail each.
func TestWorkerStopsWhenItsGuardIsDown(t *testing.T) {
	repo, base := coordRepo(t)
	down := errors.New("hook guard failed on tool.execute.before and its failure policy is closed")
	var stopped error
	x := &taskExec{host: &run.HandedHost{Halted: func() error { return down }}, slots: make(chan int, 1), out: io.Discard,
		halt: func(err error) { stopped = err }}
	x.slots <- 1
	_, err := x.run(context.Background(), repo, workers.Assignment{Offer: workers.Offer{Run: "p", Task: 1, Plan: workerPlan, Session: "s1", Base: base, AttemptID: "att1"}}, io.Discard)
	if !errors.Is(err, down) {
		t.Errorf("the task's error = %v, want the guard's", err)
	}
	if !errors.Is(stopped, down) {
		t.Errorf("the worker stopped with %v, want the guard's failure", stopped)
	}
}
