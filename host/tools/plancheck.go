package tools

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

func (t *Tools) planCheck(args map[string]any) (plugins.ToolResult, error) {
	name, err := stringArg(args, argPlan, false)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	p, res, done := t.planFor(name)
	if done {
		return res, nil
	}
	task, res, done := findTask(p, args[argTask])
	if done {
		return res, nil
	}
	label := fmt.Sprintf("task %q", task.Title)
	if task.Number > 0 {
		label = fmt.Sprintf("task %d %q", task.Number, task.Title)
	}
	if task.Done {
		pr := p.Progress()
		return ok("%s of %s was already ticked (%d/%d done)", label, p.Name, pr.Completed, pr.Total)
	}
	np, err := plans.SetDoneIn(p, task, true)
	if err != nil {
		// A *plans.TaskGoneError says to reload; the agent can act on it.
		return failf("plan_check: %v", err)
	}
	t.mu.Lock()
	t.lastPlan = np
	t.mu.Unlock()
	pr := np.Progress()
	msg := fmt.Sprintf("ticked %s of %s (%d/%d done)", label, np.Name, pr.Completed, pr.Total)
	if pr.Complete() {
		msg += "; every task of the plan is done"
	}
	return ok("%s", msg)
}

// planFor loads the named plan, or the active one from state.json. done
// reports that res is the (failed) answer.
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

func (t *Tools) planFor(name string) (*plans.Plan, plugins.ToolResult, bool) {
	fail := func(format string, a ...any) (*plans.Plan, plugins.ToolResult, bool) {
		r, _ := failf(format, a...)
		return nil, r, true
	}
	if name != "" {
		if p := t.recentPlan(name); p != nil {
			return p, plugins.ToolResult{}, false
		}
		p, err := plans.Find(t.root, name)
		if err != nil {
			return fail("plan_check: %v", err)
		}
		return p, plugins.ToolResult{}, false
	}
	st, _, err := plans.ProjectStore(t.root).Load()
	if err != nil {
		return fail("plan_check: %v", err)
	}
	if st == nil || st.ActivePlan == "" {
		return fail("plan_check: no plan is active (no .weave/state.json); name the plan with the plan argument")
	}
	real, _, err := t.resolve(st.ActivePlan)
	if err != nil {
		return fail("plan_check: the active plan %s: %v", st.ActivePlan, err)
	}
	p, err := plans.Load(real)
	if err != nil {
		return fail("plan_check: the active plan: %v; name the plan with the plan argument", err)
	}
	return p, plugins.ToolResult{}, false
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
	want := strings.ToLower(title)
	var partial []plans.Task
	for _, tk := range p.Tasks {
		title := strings.ToLower(tk.Title)
		if title == want {
			return tk, plugins.ToolResult{}, false
		}
		if want != "" && strings.Contains(title, want) {
			partial = append(partial, tk)
		}
	}
	switch len(partial) {
	case 1:
		return partial[0], plugins.ToolResult{}, false
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
