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
//     model that ticks go through plan_check. So is a task that left the
//     file (its item deleted, or no longer a checkbox): a run's tasks are
//     those it started with and those added since, and it is done only
//     when each of them was ticked through this door (or before the run).
//   - While a run owns its plan, the blocks of a task (its verify blocks
//     above all) are those it had when the run started (AsStarted): the
//     run hands that task over, and plan_check runs and judges those
//     blocks, so that a block edited in place during the run (by a model's
//     edit or bash) does not weaken the check; the model is told that the
//     block it changed is not the one run.
//   - Between runs the file is a person's: OwnTicks starts from the file as
//     it is, verify blocks included.

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
	// Claim, when set, makes plan_check record a claim instead of ticking:
	// the caller is a worker of a run with workers, in a worktree of its
	// own. Its plan_check runs the task's verify blocks there (unless
	// Runbook) and calls Claim when they pass; the box is ticked later,
	// by the run, once the task's commit has landed and its verify blocks
	// passed again on the landed tree. A worker's claim is never a tick.
	Claim func()
}

// ownedPlan is the plan a run owns the checkbox bytes of: plan is the file
// as the door last left it.
type ownedPlan struct {
	plan *plans.Plan
	// started is the plan as the run started: its tasks' verify blocks are
	// the ones a tick runs.
	started *plans.Plan
	// restored are the notices of marks and tasks put back that the run
	// has not taken yet (KeepTicks).
	restored []string
	// lost are the tasks that left the file during the run and could not
	// be put back: the run is not done.
	lost []plans.Task
}

// OwnTicks makes this door the only writer of the checkboxes of p's file
// until release is called: from now on a mark that differs from what the
// door wrote is put back (see KeepTicks). p is the plan as the run read it
// at its start, a person's last word.
func (t *Tools) OwnTicks(p *plans.Plan) (release func()) {
	t.tick.Lock()
	defer t.tick.Unlock()
	o := &ownedPlan{plan: p, started: p}
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
// checkbox that changed without the door is put back first, and every task
// that left the file, so that no progress is taken from a tick that did not
// pass the door, nor from a task that is no longer there; notices says
// what was put back since the last call, for the person's screen. A
// *plans.RemovedError says that tasks left the file during the run and
// could not be put back: the run is not done.
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
	if len(o.lost) > 0 {
		return o.plan, notices, &plans.RemovedError{Plan: o.plan.Name, Tasks: o.lost}
	}
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
	np, kept, err := plans.KeepMarks(o.plan)
	if err != nil {
		return "", err
	}
	o.plan = np
	o.lost = append(o.lost, kept.Lost...)
	t.mu.Lock()
	if t.lastPlan != nil && t.lastPlan.Path == np.Path {
		t.lastPlan = np
	}
	t.mu.Unlock()
	var notes []string
	if n := t.marksNote(o, np, kept.Marks); n != "" {
		notes = append(notes, n)
	}
	if n := t.tasksNote(o, np, kept.Restored, kept.Lost); n != "" {
		notes = append(notes, n)
	}
	return strings.Join(notes, "\n\n"), nil
}

// taskLabels names tasks for a message: "task 1 (A), task 2 (B)".
func taskLabels(tasks []plans.Task) string {
	labels := make([]string, len(tasks))
	for i, b := range tasks {
		labels[i] = "task " + b.Label()
	}
	return strings.Join(labels, ", ")
}

// marksNote is the model's note on the checkboxes put back in np, and the
// screen's notice is kept in o; "" when none was.
func (t *Tools) marksNote(o *ownedPlan, np *plans.Plan, back []plans.Task) string {
	if len(back) == 0 {
		return ""
	}
	what := "ticked"
	if !back[0].Done {
		what = "unticked"
	}
	boxes, was, is, it := "the checkbox", "was", "is", "it"
	if len(back) > 1 {
		boxes, was, is, it = "the checkboxes", "were", "are", "them"
	}
	list := taskLabels(back)
	t.log.Warn("a plan checkbox changed without the tick door; put back", "plan", np.Path, "tasks", list)
	o.restored = append(o.restored, fmt.Sprintf("%s of %s %s %s without plan_check; the run put %s back", list, np.Name, was, what, it))
	return fmt.Sprintf("refused: %s of %s of %s %s %s without plan_check and %s put back; checkbox bytes are host-owned: ticks go through plan_check, which runs the task's verify blocks",
		boxes, list, np.Name, was, what, is)
}

// tasksNote is the model's note on the tasks that left np's file, put back
// or lost, and the screen's notice is kept in o; "" when none left.
func (t *Tools) tasksNote(o *ownedPlan, np *plans.Plan, restored, lost []plans.Task) string {
	var notes []string
	if len(restored) > 0 {
		list := taskLabels(restored)
		was, is, it := "was", "is", "it"
		if len(restored) > 1 {
			was, is, it = "were", "are", "them"
		}
		t.log.Warn("a plan task was removed during a run; put back", "plan", np.Path, "tasks", list)
		o.restored = append(o.restored, fmt.Sprintf("%s of %s %s removed from the plan during the run; the run put %s back", list, np.Name, was, it))
		notes = append(notes, fmt.Sprintf("refused: %s of %s %s removed from the plan (or no longer a checkbox) and %s put back; tasks are not removed during a run: a task is done only when plan_check ticks it, which runs its verify blocks",
			list, np.Name, was, is))
	}
	if len(lost) > 0 {
		list := taskLabels(lost)
		was := "was"
		if len(lost) > 1 {
			was = "were"
		}
		t.log.Warn("a plan task was removed during a run and could not be put back", "plan", np.Path, "tasks", list)
		notes = append(notes, fmt.Sprintf("refused: %s of %s %s removed from the plan (or no longer a checkbox) and could not be put back; tasks are not removed during a run: the run stops, and the plan is not done",
			list, np.Name, was))
	}
	return strings.Join(notes, "\n\n")
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

// AsStarted returns task of p with the blocks it had when the run that
// owns p started (found by number and title, or by number alone for a task
// renamed since, or else as handed, for a task added during the run), so
// that a block edited in place during the run (a verify block weakened by
// a model's edit or bash) neither checks less nor runs something else; a
// task the run did not start with, or any task when no run owns p, is
// returned as it is. The rest of the task (its place, title and mark) is
// the file's now. note is the model's notice when the verify blocks in the
// file differ from those the run checks, "" when they do not.
func (t *Tools) AsStarted(ctx context.Context, p *plans.Plan, task plans.Task) (run plans.Task, note string) {
	t.tick.Lock()
	o := t.owned
	t.tick.Unlock()
	if o == nil || o.started.Path != p.Path {
		return task, ""
	}
	orig, found := o.started.Lookup(task)
	if !found && task.Number > 0 {
		for _, c := range o.started.Tasks {
			if c.Number == task.Number && c.Verification == task.Verification {
				orig, found = c, true
				break
			}
		}
	}
	if !found {
		if h := callScopeOf(ctx).handed; h != nil && strings.EqualFold(h.Plan, p.Name) && h.Task.Number == task.Number && h.Task.Title == task.Title {
			orig, found = h.Task, true
		}
	}
	if !found {
		return task, ""
	}
	run = task
	run.Blocks = orig.Blocks
	if !plans.SameBlocks(orig.VerifyBlocks(), task.VerifyBlocks()) {
		t.log.Warn("a verify block changed during the run; the run checks the one it started with", "plan", p.Path, "task", task.Label())
		note = fmt.Sprintf("note: the verify block of task %s of %s was changed during the run; the run checks the block it started with. Verify blocks are the person's: do the work the original block checks.",
			task.Label(), p.Name)
	}
	return run, note
}

// Verify runs the verify blocks of task, in order, through this door as
// caller in session: each is a bash call through the capability gate and
// the tool hooks. It returns "" when every block passed (or there are
// none), else the refusal of the tick, which names the block, its exit
// code and its output.
func (t *Tools) Verify(ctx context.Context, caller Caller, session string, task plans.Task) (string, error) {
	// A verify block is the person's, as a runbook block is: the sandbox
	// holds it only with sandbox.blocks.
	ctx = context.WithValue(ctx, blockKey{}, true)
	for _, b := range task.VerifyBlocks() {
		// Whoever watches the caller's commands (a run's view) sees the
		// block run, as an agent's own bash call shows.
		if w := callScopeOf(ctx).output; w != nil {
			fmt.Fprintf(w, "$ %s\n", commandLine(b.Code))
		}
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
