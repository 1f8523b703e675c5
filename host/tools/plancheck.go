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
	register(plugins.ToolPlanCheck, func(_ context.Context, t *Tools, c call) (plugins.ToolResult, error) { return t.planCheck(c.args) })
}

func (t *Tools) planCheck(args map[string]any) (plugins.ToolResult, error) {
	t.tick.Lock()
	defer t.tick.Unlock()
	name, err := stringArg(args, argPlan, false)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	p, err := t.planFor(name)
	if err != nil {
		return failf("plan_check: %v", err)
	}
	task, res, done := findTask(p, args[argTask])
	if done {
		return res, nil
	}
	label := "task " + task.Label()
	np, already, err := t.setDone(p, task, true)
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
	return ok("%s", msg)
}

// Tick is the one door through which a plan task is ticked: the plan_check
// tool, plugins.Host.TickTask (a plan_check call through the gate) and the
// run's confirmation that a finished task is ticked all pass here. It ticks
// task of p by patching its checkbox in the file, unless the task is ticked
// already, and returns the plan as it now is. A *plans.TaskGoneError says
// the task is no longer in the file.
func (t *Tools) Tick(p *plans.Plan, task plans.Task) (np *plans.Plan, already bool, err error) {
	t.tick.Lock()
	defer t.tick.Unlock()
	return t.setDone(p, task, true)
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
	if task.Done == done {
		return p, true, nil
	}
	np, err = plans.SetDoneIn(p, task, done)
	if err != nil {
		return np, false, err
	}
	t.mu.Lock()
	t.lastPlan = np
	t.mu.Unlock()
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

// Ticked returns the plan as the tick door last wrote it when that was the
// file at path, else nil; plans.Reload tells whether it is still current.
func (t *Tools) Ticked(path string) *plans.Plan {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lastPlan == nil || t.lastPlan.Path != path {
		return nil
	}
	return t.lastPlan
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
		for _, tk := range p.Tasks {
			if tk.Number == n {
				return tk, plugins.ToolResult{}, false
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
		if tk.Number > 0 {
			parts = append(parts, fmt.Sprintf("%d. %s", tk.Number, tk.Title))
		} else {
			parts = append(parts, tk.Title)
		}
	}
	return "its tasks: " + strings.Join(parts, "; ")
}
