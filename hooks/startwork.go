package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weavehq/weave/plans"
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
// command.execute.before, by the one decision procedure of plans.Resolve:
// with a name, that plan (exact case-insensitive name, else the newest plan
// whose name contains it); without one, the plan in state.json if it is
// incomplete, else the sole incomplete plan. A resolved plan is a Modify
// whose Args carry plan_path, plan_name, mode (start or resume), completed
// and total; anything else (complete, not found, several, none) is a Block
// whose reason tells the user what to do.
type StartWork struct {
	project string
}

// NewStartWork returns the hook; project is used when an event has no cwd.
func NewStartWork(project string) *StartWork {
	return &StartWork{project: project}
}

func (h *StartWork) info() plugins.Info {
	return builtinInfo(StartWorkID, PriorityContext, plugins.EventCommandExecuteBefore)
}

// registered fails closed: a start that could not be resolved must not run.
func (h *StartWork) registered() Registered { return builtinRegistered(h, h.info(), FailClosed) }

// Info describes the hook.
func (h *StartWork) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// ResolutionKey is the key of ev.Data under which a host that resolved the
// plan of a start itself hands the hooks its Resolution: the start-work hook
// then takes it as it is instead of resolving again, so that a start is
// resolved once.
const ResolutionKey = "resolution"

// Resolution is a host's resolution of a start, as the hooks see it.
type Resolution struct {
	// Verdict is the plans.Verdict: start, resume, complete, not-found...
	Verdict   string           `json:"verdict"`
	PlanName  string           `json:"plan_name,omitempty"`
	PlanPath  string           `json:"plan_path,omitempty"`
	Completed int              `json:"completed,omitempty"`
	Total     int              `json:"total,omitempty"`
	Next      *plugins.TaskRef `json:"next,omitempty"`
}

// NewResolution describes res for the hooks.
func NewResolution(res plans.Resolution) Resolution {
	out := Resolution{Verdict: string(res.Verdict)}
	if res.Plan != nil {
		info := planInfo(res.Plan)
		out.PlanName, out.PlanPath, out.Completed, out.Total, out.Next = info.Name, info.Path, info.Completed, info.Total, info.Next
	}
	return out
}

// resolutionOf reads a host's resolution from ev, if it carries one.
func resolutionOf(ev plugins.Event) (Resolution, bool) {
	raw, ok := ev.Data[ResolutionKey]
	if !ok {
		return Resolution{}, false
	}
	var r Resolution
	b, err := json.Marshal(raw)
	if err != nil || json.Unmarshal(b, &r) != nil || r.Verdict == "" {
		return Resolution{}, false
	}
	return r, true
}

// Handle resolves the plan of a start-work command. When the host resolved
// it already (ResolutionKey), the hook describes that resolution and leaves
// a start it cannot run to the host, which tells the user.
func (h *StartWork) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Command != CommandStartWork {
		return allow, nil
	}
	if r, ok := resolutionOf(ev); ok {
		info := PlanInfo{Name: r.PlanName, Path: r.PlanPath, Completed: r.Completed, Total: r.Total, Next: r.Next}
		switch plans.Verdict(r.Verdict) {
		case plans.VerdictStart:
			return resolved(info, StartModeStart), nil
		case plans.VerdictResume:
			return resolved(info, StartModeResume), nil
		}
		return allow, nil
	}
	project, err := projectDir(ev, h.project)
	if err != nil {
		return plugins.Decision{}, err
	}
	state, _, err := plans.ProjectStore(project).Load()
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("read work state: %w", err)
	}
	res, err := plans.Resolve(ctx, project, strings.TrimSpace(ev.Arguments), state)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("resolve plan: %w", err)
	}
	switch res.Verdict {
	case plans.VerdictStart:
		return resolved(planInfo(res.Plan), StartModeStart), nil
	case plans.VerdictResume:
		return resolved(planInfo(res.Plan), StartModeResume), nil
	}
	return block(res.Message()), nil
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
