package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// The tick door. A plan's checkbox changes only here, and only after the
// task's verify blocks passed:
//
//   - plan_check (and plugins.Host.TickTask, which is a plan_check call)
//     runs the task's verify blocks through this door (bash calls through
//     the gate and the hooks) before it ticks; a failing block refuses the
//     tick and says why.
//   - In a run, plan_check ticks only the task the run handed the caller
//     (Scope.Handed), and a runbook task only when the caller is the host's
//     runbook executor, whose blocks just ran; a model never ticks one.
//   - While a run owns its plan (OwnTicks), a checkbox that changes any
//     other way (a model's write, edit or bash, a person's editor) is put
//     back after the tool call that changed it, or before the run takes
//     progress from the file (KeepTicks), and the call's result tells the
//     model that ticks go through plan_check.
//   - Between runs the file is a person's: OwnTicks starts from the file as
//     it is.

// Handed is the task a run handed an agent: the only task its plan_check
// may tick. The run sets it in the Scope of the agent's calls, in the
// host's context, out of a plugin's reach.
type Handed struct {
	// Plan is the plan's name.
	Plan string
	// Task is the task handed over.
	Task plans.Task
	// Runbook says the caller is the host's runbook executor, which ran the
	// task's blocks (its verify blocks last) through this door just before
	// it ticks: its tick does not run them again.
	Runbook bool
}

// ownedPlan is the plan a run owns the checkbox bytes of: plan is the file
// as the door last left it.
type ownedPlan struct {
	plan *plans.Plan
	// restored are the notices of marks put back that the run has not
	// taken yet (KeepTicks).
	restored []string
}

// OwnTicks makes this door the only writer of the checkboxes of p's file
// until release is called: from now on a mark that differs from what the
// door wrote is put back (see KeepTicks). p is the plan as the run read it
// at its start, a person's last word.
func (t *Tools) OwnTicks(p *plans.Plan) (release func()) {
	t.tick.Lock()
	defer t.tick.Unlock()
	o := &ownedPlan{plan: p}
	t.owned = o
	return func() {
		t.tick.Lock()
		defer t.tick.Unlock()
		if t.owned == o {
			t.owned = nil
		}
	}
}

// KeepTicks returns p's file as it now is. When a run owns it, every
// checkbox that changed without the door is put back first, so that no
// progress is taken from a tick that did not pass the door; notices says
// which were put back since the last call, for the person's screen.
func (t *Tools) KeepTicks(p *plans.Plan) (np *plans.Plan, notices []string, err error) {
	t.tick.Lock()
	defer t.tick.Unlock()
	o := t.owned
	if o == nil || o.plan.Path != p.Path {
		np, err = plans.Reload(p)
		return np, nil, err
	}
	if _, err := t.keepLocked(o); err != nil {
		return nil, nil, err
	}
	notices, o.restored = o.restored, nil
	return o.plan, notices, nil
}

// keepTicks puts back the marks of the owned plan that changed without the
// door, after a tool call that may have written the file; the returned
// note, "" when nothing changed, goes to the model with the call's result.
func (t *Tools) keepTicks() string {
	t.tick.Lock()
	defer t.tick.Unlock()
	if t.owned == nil {
		return ""
	}
	note, err := t.keepLocked(t.owned)
	if err != nil {
		t.log.Warn("keep the plan's checkboxes", "plan", t.owned.plan.Path, "err", err)
	}
	return note
}

// keepLocked is keepTicks with t.tick held.
func (t *Tools) keepLocked(o *ownedPlan) (string, error) {
	np, back, err := plans.KeepMarks(o.plan)
	if err != nil {
		return "", err
	}
	o.plan = np
	t.mu.Lock()
	if t.lastPlan != nil && t.lastPlan.Path == np.Path {
		t.lastPlan = np
	}
	t.mu.Unlock()
	if len(back) == 0 {
		return "", nil
	}
	labels := make([]string, len(back))
	for i, b := range back {
		labels[i] = "task " + b.Label()
	}
	what := "ticked"
	if !back[0].Done {
		what = "unticked"
	}
	boxes, was, is, it := "the checkbox", "was", "is", "it"
	if len(back) > 1 {
		boxes, was, is, it = "the checkboxes", "were", "are", "them"
	}
	list := strings.Join(labels, ", ")
	note := fmt.Sprintf("refused: %s of %s of %s %s %s without plan_check and %s put back; checkbox bytes are host-owned: ticks go through plan_check, which runs the task's verify blocks",
		boxes, list, np.Name, was, what, is)
	t.log.Warn("a plan checkbox changed without the tick door; put back", "plan", np.Path, "tasks", list)
	o.restored = append(o.restored, fmt.Sprintf("%s of %s %s %s without plan_check; the run put %s back", list, np.Name, was, what, it))
	return note, nil
}

// mayTick says why the caller of ctx may not tick task of p through
// plan_check ("" when it may), and whether the task's verify blocks must
// run first.
func mayTick(ctx context.Context, p *plans.Plan, task plans.Task) (refusal string, verify bool) {
	label := "task " + task.Label()
	h := callScopeOf(ctx).handed
	handed := func() string {
		return fmt.Sprintf("refused: you were handed task %s of %s; plan_check ticks only that task, not %s of %s", h.Task.Label(), h.Plan, label, p.Name)
	}
	mine := func() bool {
		cur, found := p.Lookup(h.Task)
		return strings.EqualFold(h.Plan, p.Name) && found && cur.Index == task.Index
	}
	switch {
	case h != nil && h.Runbook && mine():
		return "", false
	case h != nil && h.Runbook:
		return handed(), false
	case agents.RunsAsRunbook(task):
		return fmt.Sprintf("refused: %s of %s is a runbook task: the runbook executor runs its blocks and ticks it, never a model", label, p.Name), false
	case h != nil && !mine():
		return handed(), false
	}
	return "", true
}

// Verify runs the verify blocks of task, in order, through this door as
// caller in session: each is a bash call through the capability gate and
// the tool hooks. It returns "" when every block passed (or there are
// none), else the refusal of the tick, which names the block, its exit
// code and its output.
func (t *Tools) Verify(ctx context.Context, caller Caller, session string, task plans.Task) (string, error) {
	for _, b := range task.VerifyBlocks() {
		res, err := t.Call(ctx, caller, session, plugins.ToolCall{Tool: plugins.ToolBash, Args: map[string]any{
			argCommand: b.Code, argShell: b.Shell(), argErrexit: true,
		}})
		if err != nil {
			return "", err
		}
		if res.Denied {
			return fmt.Sprintf("The tick was refused: the verify block at line %d of the plan was not allowed to run: %s", b.Line, res.Output), nil
		}
		if res.IsError || res.ExitCode != 0 {
			return fmt.Sprintf("The tick was refused: the verify block at line %d of the plan failed (exit code %d). It runs:\n%s\nIts output:\n%s\nFix the cause, then call plan_check again.",
				b.Line, res.ExitCode, strings.TrimRight(b.Code, "\n"), strings.TrimRight(res.Output, "\n")), nil
		}
	}
	return "", nil
}
