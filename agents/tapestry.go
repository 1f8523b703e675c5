package agents

import (
	"context"
	"fmt"
	"sync"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// TapestryAgent is Tapestry as an agent plugin. It carries out plan tasks
// directly; it never delegates. A task that carries shell blocks runs as a
// runbook (RunRunbook); any other task needs a model, which this build's
// Tapestry reports instead of guessing. The zero value reads the plan afresh
// for every task; NewTapestryAgent keeps the last plan it read, which costs
// no parse again when only its checkboxes changed.
type TapestryAgent struct {
	mu   sync.Mutex
	last *plans.Plan
}

// NewTapestryAgent returns Tapestry keeping the plan it last read.
func NewTapestryAgent() *TapestryAgent { return &TapestryAgent{} }

// Info describes Tapestry as an agent plugin.
func (*TapestryAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: AgentID(Tapestry), Version: "1", Kind: plugins.KindAgent, Role: Tapestry}, nil
}

// Handle carries out the task req names (req.Plan, req.Task).
func (a *TapestryAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	if req.Plan == "" || req.Task == nil {
		return plugins.AgentResponse{Error: "tapestry carries out plan tasks: the request names no plan file and task"}, nil
	}
	p, err := a.plan(req.Plan)
	if err != nil {
		return plugins.AgentResponse{Error: fmt.Sprintf("read the plan: %v", err)}, nil
	}
	t, ok := p.Lookup(plans.Task{Number: req.Task.Number, Title: req.Task.Title})
	if !ok {
		return plugins.AgentResponse{Error: fmt.Sprintf("task %s is not in %s", plans.TaskLabel(req.Task.Number, req.Task.Title), req.Plan)}, nil
	}
	scripts, err := RunbookScripts(t)
	if err != nil {
		return plugins.AgentResponse{Error: err.Error()}, nil
	}
	return RunRunbook(ctx, h, TaskPayload{Plan: p.Name, Number: t.Number, Title: t.Title, Scripts: scripts})
}

// plan reads the plan at path, again from the last one read when it is
// the same file.
func (a *TapestryAgent) plan(path string) (*plans.Plan, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last != nil && a.last.Path == path {
		p, err := plans.Reload(a.last)
		if err == nil {
			a.last = p
		}
		return p, err
	}
	p, err := plans.Load(path)
	if err != nil {
		return nil, err
	}
	a.last = p
	return p, nil
}

var _ plugins.Agent = (*TapestryAgent)(nil)
