package host

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// todo is one entry of a session's checklist.
type todo struct {
	Content string
	Status  string
}

var todoMarks = map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

func (t *Tools) task(ctx context.Context, c Caller, args map[string]any) (plugins.ToolResult, error) {
	agent, err := stringArg(args, argAgent, true)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	prompt, err := stringArg(args, argPrompt, true)
	if err != nil {
		return failf("task: %v; give the agent a self-contained instruction", err)
	}
	if t.delegator == nil {
		return failf("task: delegation is not available in this run; do the work yourself")
	}
	agent = strings.ToLower(strings.TrimSpace(agent))
	answer, err := t.delegator.Delegate(ctx, c, agent, prompt)
	if ctx.Err() != nil {
		return plugins.ToolResult{}, fmt.Errorf("task %s: %w", agent, ctx.Err())
	}
	if err != nil {
		return failf("task: %s could not finish: %v", agent, err)
	}
	return ok("%s", answer)
}

func (t *Tools) todowrite(session string, args map[string]any) (plugins.ToolResult, error) {
	raw, present := args[argTodos]
	list, isList := raw.([]any)
	if !present || !isList {
		return failf("todowrite: argument %q must be a list of {content, status}, got %s", argTodos, jsonType(raw))
	}
	todos := make([]todo, 0, len(list))
	for i, item := range list {
		m, isMap := item.(map[string]any)
		if !isMap {
			return failf("todowrite: todos[%d] must be an object {content, status}, got %s", i, jsonType(item))
		}
		content, _ := m["content"].(string)
		status, _ := m["status"].(string)
		if strings.TrimSpace(content) == "" {
			return failf("todowrite: todos[%d] has no content", i)
		}
		if status == "" {
			status = "pending"
		}
		if _, known := todoMarks[status]; !known {
			return failf("todowrite: todos[%d] has status %q; want pending, in_progress or completed", i, status)
		}
		todos = append(todos, todo{Content: strings.TrimSpace(content), Status: status})
	}
	t.mu.Lock()
	t.todos[session] = todos
	t.mu.Unlock()
	if len(todos) == 0 {
		return ok("the checklist is empty")
	}
	var b strings.Builder
	done := 0
	for _, td := range todos {
		fmt.Fprintf(&b, "- %s %s\n", todoMarks[td.Status], td.Content)
		if td.Status == "completed" {
			done++
		}
	}
	fmt.Fprintf(&b, "%d/%d done\n", done, len(todos))
	return ok("%s", b.String())
}

// Todos returns session's checklist as the last todowrite left it.
func (t *Tools) Todos(session string) []plugins.PlanTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]plugins.PlanTask, len(t.todos[session]))
	for i, td := range t.todos[session] {
		out[i] = plugins.PlanTask{Number: i + 1, Title: td.Content, Done: td.Status == "completed"}
	}
	return out
}

// EndSession forgets what the tools kept for session (its checklist).
func (t *Tools) EndSession(session string) {
	t.mu.Lock()
	delete(t.todos, session)
	t.mu.Unlock()
}

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
	st, _, err := plans.NewStore(filepath.Join(t.root, ".weave")).Load()
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
