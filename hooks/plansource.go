package hooks

import (
	"context"
	"errors"
	"fmt"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// ErrNoPlan is returned by PlanSource.Find when no plan matches the name.
var ErrNoPlan = errors.New("no such plan")

// PlanInfo is what the built-in hooks need to know about a plan.
type PlanInfo struct {
	Name      string
	Path      string
	Completed int
	Total     int
	// Next is the first unchecked task, nil when the plan is complete.
	Next *plugins.TaskRef
}

// Complete reports whether every task is done.
func (p PlanInfo) Complete() bool { return p.Total > 0 && p.Completed >= p.Total }

// progress renders "3/5".
func (p PlanInfo) progress() string { return fmt.Sprintf("%d/%d", p.Completed, p.Total) }

// WorkState is the part of .weave/state.json the built-in hooks read.
type WorkState struct {
	// ActivePlan is the path of the active plan; empty when none.
	ActivePlan string
	PlanName   string
	Paused     bool
	// SessionIDs are the sessions that own the active plan.
	SessionIDs []string
	// Continuation is the nudge bookkeeping the last run left (zero when
	// none): where a new hook process starts counting.
	Continuation plans.Continuation
}

// PlanSource finds plans and reads the work state. The plans package
// implements it (see NewPlansSource); tests use their own.
type PlanSource interface {
	// Find looks a plan up by name: exact case-insensitive base name, else
	// the newest plan whose name contains it. It wraps ErrNoPlan when none
	// matches.
	Find(ctx context.Context, project, name string) (PlanInfo, error)
	// Discover lists the plans of a project, newest modified first.
	Discover(ctx context.Context, project string) ([]PlanInfo, error)
	// Plan reads one plan by path.
	Plan(ctx context.Context, path string) (PlanInfo, error)
	// State reads the work state; no state file is the zero WorkState.
	State(ctx context.Context, project string) (WorkState, error)
}
