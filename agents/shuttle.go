package agents

import (
	"context"

	"github.com/weavehq/weave/plugins"
)

// ShuttleAgent is the Shuttle of a category (shuttle-<category>): a model
// agent that also carries out the plan tasks tagged with its category,
// exactly as Tapestry carries out a task (a runbook task runs its blocks;
// any other task is the model's, ticked with plan_check, which its verify
// blocks gate), but thinking with the category's model, prompt and row. A
// request that names no task (Loom delegating) is an ordinary model
// request.
type ShuttleAgent struct {
	Model ModelAgent
}

// Info describes the Shuttle as an agent plugin.
func (a ShuttleAgent) Info(ctx context.Context) (plugins.Info, error) { return a.Model.Info(ctx) }

// Handle carries out req's task, or answers req.Prompt.
func (a ShuttleAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	if req.Plan == "" || req.Task == nil {
		return a.Model.Handle(ctx, h, req)
	}
	return NewModelTapestry(a.Model).Handle(ctx, h, req)
}

var _ plugins.Agent = ShuttleAgent{}
