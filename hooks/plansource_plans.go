package hooks

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// NewPlansSource returns the PlanSource backed by the plans package.
func NewPlansSource() PlanSource { return plansSource{} }

type plansSource struct{}

func planInfo(p *plans.Plan) PlanInfo {
	prog := p.Progress()
	info := PlanInfo{Name: p.Name, Path: p.Path, Completed: prog.Completed, Total: prog.Total}
	if t, ok := p.Next(); ok {
		info.Next = &plugins.TaskRef{Number: t.Number, Title: t.Title}
	}
	return info
}

func (plansSource) Find(ctx context.Context, project, name string) (PlanInfo, error) {
	p, err := plans.Find(project, name)
	if err != nil {
		// Tell "no such plan" from a failure to read: only the former lists
		// the alternatives.
		all, derr := plans.Discover(project)
		if derr == nil && !anyNameContains(all, name) {
			return PlanInfo{}, fmt.Errorf("%w: %q: %v", ErrNoPlan, name, err)
		}
		return PlanInfo{}, err
	}
	return planInfo(p), nil
}

func anyNameContains(all []*plans.Plan, name string) bool {
	for _, p := range all {
		if strings.Contains(strings.ToLower(p.Name), strings.ToLower(name)) {
			return true
		}
	}
	return false
}

func (plansSource) Discover(ctx context.Context, project string) ([]PlanInfo, error) {
	all, err := plans.Discover(project)
	if err != nil {
		return nil, err
	}
	out := make([]PlanInfo, len(all))
	for i, p := range all {
		out[i] = planInfo(p)
	}
	return out, nil
}

func (plansSource) Plan(ctx context.Context, path string) (PlanInfo, error) {
	project := filepath.Dir(filepath.Dir(filepath.Dir(path))) // <project>/.weave/plans/x.md
	p, err := plans.Find(project, strings.TrimSuffix(filepath.Base(path), ".md"))
	if err != nil {
		return PlanInfo{}, err
	}
	return planInfo(p), nil
}

func (plansSource) State(ctx context.Context, project string) (WorkState, error) {
	st, _, err := plans.ProjectStore(project).Load()
	if err != nil {
		return WorkState{}, err
	}
	if st == nil {
		return WorkState{}, nil
	}
	ws := WorkState{ActivePlan: st.ActivePlan, PlanName: st.PlanName, Paused: st.Paused, SessionIDs: st.SessionIDs}
	if st.Continuation != nil {
		ws.Continuation = *st.Continuation
	}
	return ws, nil
}
