package run

import (
	"context"
	"io"

	"github.com/weavehq/weave/plans"
)

// Worker carries out one task of a run with workers, away from the others:
// in a worktree of its own, on a branch of its own, under the same rules as
// a lone run. A local worker is a worktree of the project; a remote one
// (weave worker, over NATS) is another process, maybe on another machine.
//
// A worker's claim is never trusted: it returns the task's commit, and the
// coordinator lands it and runs the task's verify blocks itself on the
// landed tree before the box is ticked.
type Worker interface {
	// Name names the worker in events, status and state.json.
	Name() string
	// Run carries out a on a branch made from a.Base, writing the task's
	// output to out, and returns the task's commit, which is in the
	// coordinator's repository when Run returns.
	Run(ctx context.Context, a Assignment, out io.Writer) (Outcome, error)
}

// Assignment is a task handed to a worker.
type Assignment struct {
	Plan *plans.Plan
	Task plans.Task
	// Session is the run's session.
	Session string
	// Base is the integration commit the task starts from; Branch the
	// task's branch.
	Base, Branch string
	// Attempt counts the task's attempts from 1; AttemptID names this one
	// in its commit's trailer.
	Attempt   int
	AttemptID string
	// Report, set by the run, hears who has the task when a worker joined
	// over the bus does: work.awarded, work.renewed and work.lost events
	// (WorkerName, WorkerLabels, Time). The run records the worker and its
	// last heartbeat in state.json for `weave status`. It never blocks.
	Report func(Event)
}

// Outcome is what a worker did with a task.
type Outcome struct {
	// Commit is the task's single commit on its branch, whose parent is
	// the assignment's Base.
	Commit string
	// Worktree is where the task ran, for events ("" for a remote worker).
	Worktree string
}
