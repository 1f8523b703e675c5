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
	payload, errMsg := a.task(req.Plan, plans.Task{Number: req.Task.Number, Title: req.Task.Title})
	if errMsg != "" {
		return plugins.AgentResponse{Error: errMsg}, nil
	}
	return RunRunbook(ctx, h, payload)
}

// task reads the plan at path (again from the last one read when it is the
// same file) and returns the runbook of its task ref, or why there is none.
func (a *TapestryAgent) task(path string, ref plans.Task) (TaskPayload, string) {
	// The plan is Tapestry's own and read under the lock only, so it is
	// brought up to date in place: a tick elsewhere costs a read of the file
	// and a compare, not a copy of every task.
	a.mu.Lock()
	defer a.mu.Unlock()
	var p *plans.Plan
	var err error
	if a.last != nil && a.last.Path == path {
		p, err = plans.Refresh(a.last)
	} else {
		p, err = plans.Load(path)
	}
	if err != nil {
		a.last = nil
		return TaskPayload{}, fmt.Sprintf("read the plan: %v", err)
	}
	a.last = p
	t, ok := p.Lookup(ref)
	if !ok {
		return TaskPayload{}, fmt.Sprintf("task %s is not in %s", plans.TaskLabel(ref.Number, ref.Title), path)
	}
	scripts, err := RunbookScripts(t)
	if err != nil {
		return TaskPayload{}, err.Error()
	}
	return TaskPayload{Plan: p.Name, Number: t.Number, Title: t.Title, Scripts: scripts}, ""
}

var _ plugins.Agent = (*TapestryAgent)(nil)
