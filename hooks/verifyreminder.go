package hooks

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/weavehq/weave/plugins"
)

// VerificationReminderID names the verification reminder.
const VerificationReminderID = "weave.verification-reminder"

// VerificationReminder reminds the agent, once per plan, to run the plan's
// Verification checklist when the plan's TODOs are all done. It handles
// plan.todos.done, which a run fires once a plan, so a runbook of any size
// calls it once.
type VerificationReminder struct {
	src     PlanSource
	project string
	mu      sync.Mutex
	done    map[string]bool // plan path -> reminded
}

// NewVerificationReminder returns the reminder; project is used when an
// event has no cwd.
func NewVerificationReminder(src PlanSource, project string) *VerificationReminder {
	return &VerificationReminder{src: src, project: project, done: make(map[string]bool)}
}

func (h *VerificationReminder) info() plugins.Info {
	return builtinInfo(VerificationReminderID, PriorityContext, plugins.EventPlanTodosDone)
}

func (h *VerificationReminder) registered() Registered {
	return builtinRegistered(h, h.info(), FailDefault)
}

// Info describes the hook.
func (h *VerificationReminder) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// Handle reminds the agent of the plan's Verification checklist, unless the
// event says none of its items is open (data.verification).
func (h *VerificationReminder) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Plan == "" {
		return allow, nil
	}
	if open, ok := intData(ev, "verification"); ok && open == 0 {
		return allow, nil
	}
	plan, err := lookupPlan(ctx, h.src, ev, h.project)
	if errors.Is(err, ErrNoPlan) {
		return allow, nil
	}
	if err != nil {
		return plugins.Decision{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done[plan.Path] {
		return allow, nil
	}
	h.done[plan.Path] = true
	todos, ok := intData(ev, "todos")
	if !ok {
		todos = plan.Total
	}
	return withContext(fmt.Sprintf("All %d tasks of %s are done. Before reporting it finished, run every check "+
		"in the plan's ## Verification section and report each result; fix anything that fails.", todos, plan.Name)), nil
}

// intData reads the number data[key] of an event, which arrives as float64
// across a plugin boundary and as int in process.
func intData(ev plugins.Event, key string) (int, bool) {
	switch v := ev.Data[key].(type) {
	case int:
		return v, true
	case float64:
		return int(v), true
	}
	return 0, false
}

// lookupPlan reads the plan an event names: by path when Event.Plan holds a
// path separator (relative paths are against the project), else by name.
func lookupPlan(ctx context.Context, src PlanSource, ev plugins.Event, configured string) (PlanInfo, error) {
	if strings.ContainsRune(ev.Plan, filepath.Separator) {
		p := ev.Plan
		if !filepath.IsAbs(p) {
			project, err := projectDir(ev, configured)
			if err != nil {
				return PlanInfo{}, err
			}
			p = filepath.Join(project, p)
		}
		return src.Plan(ctx, p)
	}
	project, err := projectDir(ev, configured)
	if err != nil {
		return PlanInfo{}, err
	}
	return src.Find(ctx, project, strings.TrimSuffix(ev.Plan, ".md"))
}

var _ plugins.Hook = (*VerificationReminder)(nil)
