package hooks

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// StartWorkID names the start-work hook.
const StartWorkID = "weave.start-work"

// CommandStartWork is the command the start-work hook resolves.
const CommandStartWork = "start-work"

// The modes a start-work resolution can have.
const (
	StartModeStart  = "start"
	StartModeResume = "resume"
)

// StartWork resolves the plan of `start-work [name]` on
// command.execute.before. With a name: that plan (exact case-insensitive
// name, else the newest plan whose name contains it), unless it is complete
// or missing. Without one: the plan in state.json if it is incomplete, else
// the sole incomplete plan; several or none are listed. A resolved plan is a
// Modify whose Args carry plan_path, plan_name, mode (start or resume),
// completed and total; anything else is a Block whose reason tells the user
// what to do.
type StartWork struct {
	src     PlanSource
	project string
}

// NewStartWork returns the hook; project is used when an event has no cwd.
func NewStartWork(src PlanSource, project string) *StartWork {
	return &StartWork{src: src, project: project}
}

func (h *StartWork) info() plugins.Info {
	return builtinInfo(StartWorkID, PriorityContext, plugins.EventCommandExecuteBefore)
}

// registered fails closed: a start that could not be resolved must not run.
func (h *StartWork) registered() Registered { return builtinRegistered(h, h.info(), FailClosed) }

// Info describes the hook.
func (h *StartWork) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// Handle resolves the plan of a start-work command.
func (h *StartWork) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Command != CommandStartWork {
		return allow, nil
	}
	project, err := projectDir(ev, h.project)
	if err != nil {
		return plugins.Decision{}, err
	}
	state, err := h.src.State(ctx, project)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("read work state: %w", err)
	}
	if name := strings.TrimSpace(ev.Arguments); name != "" {
		return h.named(ctx, project, name, state)
	}
	if state.ActivePlan != "" {
		p, err := h.src.Plan(ctx, state.ActivePlan)
		// A vanished or unreadable active plan is not fatal: fall back to
		// the plans on disk, which are the truth.
		if err == nil && !p.Complete() {
			return resolved(p, StartModeResume), nil
		}
	}
	all, err := h.src.Discover(ctx, project)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("list plans: %w", err)
	}
	incomplete := incompletePlans(all)
	switch {
	case len(incomplete) == 1:
		return resolved(incomplete[0], StartModeStart), nil
	case len(incomplete) > 1:
		return block("several plans are incomplete; pick one with `weave start-work NAME`: " + listPlans(incomplete)), nil
	case len(all) > 0:
		return block("every plan is complete (" + listPlans(all) + "); write a new plan in .weave/plans/"), nil
	}
	return block("no plans in .weave/plans/; write one there (`weave init` creates a sample)"), nil
}

func (h *StartWork) named(ctx context.Context, project, name string, state WorkState) (plugins.Decision, error) {
	p, err := h.src.Find(ctx, project, name)
	if errors.Is(err, ErrNoPlan) {
		all, derr := h.src.Discover(ctx, project)
		if derr != nil {
			return plugins.Decision{}, fmt.Errorf("list plans: %w", derr)
		}
		msg := fmt.Sprintf("no plan named %q in .weave/plans/", name)
		switch inc := incompletePlans(all); {
		case len(inc) > 0:
			msg += " (incomplete: " + listPlans(inc) + ")"
		case len(all) > 0:
			msg += " (all complete: " + listPlans(all) + ")"
		default:
			msg += "; there are no plans yet"
		}
		return block(msg), nil
	}
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("find plan %q: %w", name, err)
	}
	if p.Complete() {
		return block(fmt.Sprintf("plan %s is already complete (%s tasks); nothing to do", p.Name, p.progress())), nil
	}
	if p.Total == 0 {
		return block(fmt.Sprintf("plan %s has no tasks; add `- [ ]` items under ## TODOs", p.Name)), nil
	}
	mode := StartModeStart
	if state.ActivePlan == p.Path {
		mode = StartModeResume
	}
	return resolved(p, mode), nil
}

func incompletePlans(all []PlanInfo) []PlanInfo {
	var out []PlanInfo
	for _, p := range all {
		if !p.Complete() && p.Total > 0 {
			out = append(out, p)
		}
	}
	return out
}

func resolved(p PlanInfo, mode string) plugins.Decision {
	verb := "Starting"
	if mode == StartModeResume {
		verb = "Resuming"
	}
	ctx := fmt.Sprintf("%s plan %s: %s tasks done.", verb, p.Name, p.progress())
	if p.Next != nil {
		ctx += " " + nextTask(p.Next)
	}
	return plugins.Decision{
		Action: plugins.Modify,
		Args: map[string]any{
			"plan_path": p.Path,
			"plan_name": p.Name,
			"mode":      mode,
			"completed": p.Completed,
			"total":     p.Total,
		},
		Context: ctx,
	}
}

// nextTask renders "Continue from the first unchecked task: 4. Title".
func nextTask(t *plugins.TaskRef) string {
	if t == nil {
		return "Continue from the first unchecked task."
	}
	if t.Number > 0 {
		return fmt.Sprintf("Continue from the first unchecked task: %d. %s", t.Number, t.Title)
	}
	return "Continue from the first unchecked task: " + t.Title
}

var _ plugins.Hook = (*StartWork)(nil)
