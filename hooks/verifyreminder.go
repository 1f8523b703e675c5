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
// Verification section when the task just done completed the plan.
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
	return builtinInfo(VerificationReminderID, PriorityContext, plugins.EventPlanTaskDone)
}

func (h *VerificationReminder) registered() Registered {
	return builtinRegistered(h, h.info(), FailDefault)
}

// Info describes the hook.
func (h *VerificationReminder) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// Handle checks whether the plan of a finished task is now complete.
func (h *VerificationReminder) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Plan == "" {
		return allow, nil
	}
	// The event says where the plan stands; only a plan it reports complete
	// is worth reading (on every task of a large plan, that read would count).
	if done, total, ok := progressOf(ev); ok && done < total {
		return allow, nil
	}
	plan, err := lookupPlan(ctx, h.src, ev, h.project)
	if errors.Is(err, ErrNoPlan) {
		return allow, nil
	}
	if err != nil {
		return plugins.Decision{}, err
	}
	if !plan.Complete() {
		return allow, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done[plan.Path] {
		return allow, nil
	}
	h.done[plan.Path] = true
	return withContext(fmt.Sprintf("All %d tasks of %s are done. Before reporting it finished, run every check "+
		"in the plan's ## Verification section and report each result; fix anything that fails.", plan.Total, plan.Name)), nil
}

// progressOf reads data.completed and data.total of a plan.task.done event,
// which arrive as float64 across a plugin boundary and as int in process.
func progressOf(ev plugins.Event) (done, total int, ok bool) {
	num := func(k string) (int, bool) {
		switch v := ev.Data[k].(type) {
		case int:
			return v, true
		case float64:
			return int(v), true
		}
		return 0, false
	}
	done, ok1 := num("completed")
	total, ok2 := num("total")
	return done, total, ok1 && ok2
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
