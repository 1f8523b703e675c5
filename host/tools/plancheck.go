package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolPlanCheck, func(ctx context.Context, t *Tools, c call) (plugins.ToolResult, error) { return t.planCheck(ctx, c) })
}

// planCheck is the tick door as a tool (see tickdoor.go): the marks a run
// owns are put right first, then the task is checked against who may tick
// it, its verify blocks run, and only then is its box ticked.
func (t *Tools) planCheck(ctx context.Context, c call) (plugins.ToolResult, error) {
	name, err := stringArg(c.args, argPlan, false)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if h := callScopeOf(ctx).handed; h != nil && h.Claim != nil {
		return t.claim(ctx, c, h, name)
	}
	note := t.keepTicks()
	p, task, res, done := t.pickTask(name, c.args[argTask])
	if done {
		return res, nil
	}
	label := "task " + task.Label()
	if task.Done {
		pr := p.Progress()
		return ok("%s of %s was already ticked (%d/%d done)", label, p.Name, pr.Completed, pr.Total)
	}
	// The task's blocks are judged and run as the run started with
	// them: one edited in place during the run does not weaken the check.
	run, changed := t.AsStarted(ctx, p, task)
	refusal, verify := mayTick(ctx, p, run)
	if refusal != "" {
		return plugins.ToolResult{Output: refusal, IsError: true, Denied: true, Reason: refusal}, nil
	}
	if verify {
		// The blocks run without the door's lock: each is a tool call,
		// which puts the owned marks right after it.
		refusal, err := t.Verify(ctx, c.caller, c.session, run)
		if err != nil {
			return plugins.ToolResult{}, err
		}
		if refusal != "" {
			if changed != "" {
				refusal = changed + "\n\n" + refusal
			}
			return plugins.ToolResult{Output: refusal, IsError: true}, nil
		}
	}
	t.tick.Lock()
	defer t.tick.Unlock()
	if t.owned != nil {
		if n, err := t.keepLocked(t.owned); err == nil && n != "" {
			note = n
		}
	}
	// The plan may have changed while the blocks ran: tick the task as the
	// file now has it.
	p, err = t.planFor(name)
	if err != nil {
		return failf("plan_check: %v", err)
	}
	cur, found := p.Lookup(task)
	if !found {
		return failf("plan_check: %v", &plans.TaskGoneError{Path: p.Path, Number: task.Number, Title: task.Title})
	}
	np, already, err := t.setDone(p, cur, true)
	if err != nil {
		// A *plans.TaskGoneError says to reload; the agent can act on it.
		return failf("plan_check: %v", err)
	}
	if already {
		pr := p.Progress()
		return ok("%s of %s was already ticked (%d/%d done)", label, p.Name, pr.Completed, pr.Total)
	}
	pr := np.Progress()
	msg := fmt.Sprintf("ticked %s of %s (%d/%d done)", label, np.Name, pr.Completed, pr.Total)
	if pr.Complete() {
		msg += "; every task of the plan is done"
	}
	if changed != "" {
		msg += "\n\n" + changed
	}
	if note != "" {
		msg += "\n\n" + note
	}
	return ok("%s", msg)
}

// pickTask finds the plan and the task a plan_check call names, under the
// door's lock; done says res is the answer (the task could not be found).
func (t *Tools) pickTask(name string, raw any) (*plans.Plan, plans.Task, plugins.ToolResult, bool) {
	t.tick.Lock()
	defer t.tick.Unlock()
	p, err := t.planFor(name)
	if err != nil {
		res, _ := failf("plan_check: %v", err)
		return nil, plans.Task{}, res, true
	}
	task, res, done := findTask(p, raw)
	return p, task, res, done
}

// Tick is the door's last step, through which every tick passes: the
// plan_check tool (after the checks above), plugins.Host.TickTask (a
// plan_check call through the gate) and `weave task done` (after the
// task's verify blocks, or forced by a person). It ticks task of p by
// patching its checkbox in the file, unless the task is ticked already,
// and returns the plan as it now is. A *plans.TaskGoneError says the task
// is no longer in the file. Tick itself verifies nothing: its callers do.
func (t *Tools) Tick(p *plans.Plan, task plans.Task) (np *plans.Plan, already bool, err error) {
	t.tick.Lock()
	defer t.tick.Unlock()
	return t.setDone(p, task, true)
}

// TickAll is Tick for several tasks of p at once, with one write of the
// plan and one fsync: a run with workers ticks the tasks it landed
// together. Each task passes the same door as through Tick (its verify
// blocks run by the caller first); a task already ticked is left as it is.
// An error names the tasks.
func (t *Tools) TickAll(p *plans.Plan, tasks []plans.Task) (np *plans.Plan, err error) {
	t.tick.Lock()
	defer t.tick.Unlock()
	np, _, err = t.setAllDone(p, tasks, true)
	if err != nil {
		return nil, fmt.Errorf("tick %s: %w", taskLabels(tasks), err)
	}
	return np, nil
}

// Untick is Tick's reverse, through the same door: `weave task undo`, for a
// task a person ticked by mistake.
func (t *Tools) Untick(p *plans.Plan, task plans.Task) (np *plans.Plan, already bool, err error) {
	t.tick.Lock()
	defer t.tick.Unlock()
	return t.setDone(p, task, false)
}

// setDone ticks or unticks task of p; the caller holds t.tick. p is
// updated in place when the file could be patched where it stands.
func (t *Tools) setDone(p *plans.Plan, task plans.Task, done bool) (np *plans.Plan, already bool, err error) {
	return t.setAllDone(p, []plans.Task{task}, done)
}

// setAllDone is setDone for several tasks of p, written at once; already
// says every one of them was in the wanted state.
func (t *Tools) setAllDone(p *plans.Plan, tasks []plans.Task, done bool) (np *plans.Plan, already bool, err error) {
	var todo []plans.Task
	for _, task := range tasks {
		if task.Done != done {
			todo = append(todo, task)
		}
	}
	if len(todo) == 0 {
		return p, true, nil
	}
	np, err = plans.SetAllDoneIn(p, todo, done)
	if err != nil {
		return np, false, err
	}
	t.mu.Lock()
	t.lastPlan = np
	t.mu.Unlock()
	if t.owned != nil && t.owned.plan.Path == np.Path {
		t.owned.plan = np
	}
	return np, false, nil
}

// Progress reports the tasks of the named plan, or of the active one (from
// .weave/state.json) when name is empty: plugins.Host.Progress.
func (t *Tools) Progress(name string) (plugins.PlanProgress, error) {
	t.tick.Lock()
	defer t.tick.Unlock()
	p, err := t.planFor(name)
	if err != nil {
		return plugins.PlanProgress{}, err
	}
	pr := p.Progress()
	out := plugins.PlanProgress{Plan: p.Name, Total: pr.Total, Done: pr.Completed, Tasks: make([]plugins.PlanTask, len(p.Tasks))}
	for i, tk := range p.Tasks {
		out.Tasks[i] = plugins.PlanTask{Number: tk.Number, Title: tk.Title, Done: tk.Done}
	}
	return out, nil
}

// recentPlan is the plan plan_check last ticked, read again, when name is
// its name; reading it again costs no parse when only its marks changed.
func (t *Tools) recentPlan(name string) *plans.Plan {
	t.mu.Lock()
	last := t.lastPlan
	t.mu.Unlock()
	if last == nil || !strings.EqualFold(last.Name, name) {
		return nil
	}
	p, err := plans.Reload(last)
	if err != nil {
		return nil
	}
	return p
}

// planFor loads the named plan, or the active one from state.json.
func (t *Tools) planFor(name string) (*plans.Plan, error) {
	if name != "" {
		if p := t.recentPlan(name); p != nil {
			return p, nil
		}
		return plans.Find(t.root, name)
	}
	st, _, err := plans.ProjectStore(t.root).Load()
	if err != nil {
		return nil, err
	}
	if st == nil || st.ActivePlan == "" {
		return nil, errors.New("no plan is active (no .weave/state.json); name the plan with the plan argument")
	}
	real, _, err := t.resolve(st.ActivePlan)
	if err != nil {
		return nil, fmt.Errorf("the active plan %s: %w", st.ActivePlan, err)
	}
	p, err := plans.Load(real)
	if err != nil {
		return nil, fmt.Errorf("the active plan: %w; name the plan with the plan argument", err)
	}
	return p, nil
}

// findTask picks a task by number or by title: exact (case-insensitive)
// first, then a unique title containing the text.
func findTask(p *plans.Plan, raw any) (plans.Task, plugins.ToolResult, bool) {
	fail := func(format string, a ...any) (plans.Task, plugins.ToolResult, bool) {
		r, _ := failf(format, a...)
		return plans.Task{}, r, true
	}
	var n int
	var isNum bool
	var title string
	switch v := raw.(type) {
	case nil:
		return fail("plan_check: missing argument %q: the task's number or title in %s", argTask, p.Name)
	case string:
		title = strings.TrimSpace(v)
		if i, err := strconv.Atoi(title); err == nil {
			n, isNum = i, true
		}
	default:
		i, got, err := intArg(map[string]any{argTask: raw}, argTask)
		if err != nil || !got {
			return fail("plan_check: argument %q must be a task number or title, got %s", argTask, jsonType(raw))
		}
		n, isNum = i, true
	}
	if isNum {
		if tk, ok := p.ByOrdinal(n); ok {
			return tk, plugins.ToolResult{}, false
		}
		if n == 0 {
			// An agent that passes the handed task's Number as it came (0
			// for an unnumbered Verification item) still names it; the
			// door then checks it is the task handed.
			for _, tk := range p.Tasks {
				if tk.Number == 0 && !tk.Done {
					return tk, plugins.ToolResult{}, false
				}
			}
		}
		return fail("plan_check: %s has no task numbered %d (%s)", p.Name, n, taskList(p))
	}
	tk, partial, found := p.FindTitle(title)
	if found {
		return tk, plugins.ToolResult{}, false
	}
	switch len(partial) {
	case 0:
		return fail("plan_check: %s has no task titled %q (%s)", p.Name, raw, taskList(p))
	}
	var names []string
	for _, tk := range partial {
		names = append(names, fmt.Sprintf("%q", tk.Title))
	}
	return fail("plan_check: %q matches %d tasks of %s (%s); give the number or the whole title", raw, len(partial), p.Name, strings.Join(names, ", "))
}

func taskList(p *plans.Plan) string {
	if len(p.Tasks) == 0 {
		return "it has no tasks"
	}
	var parts []string
	for _, tk := range p.Tasks {
		parts = append(parts, fmt.Sprintf("%d. %s", tk.Ordinal(), tk.Title))
	}
	return "its tasks: " + strings.Join(parts, "; ")
}
