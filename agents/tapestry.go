package agents

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// TapestryAgent is Tapestry as an agent plugin. It carries out plan tasks directly; it never delegates. A task that
// carries shell blocks runs as a runbook (RunRunbook); any other task needs
// a model, which this build's Tapestry reports instead of guessing.
type TapestryAgent struct{}

// Info describes Tapestry as an agent plugin.
func (TapestryAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: AgentID(Tapestry), Version: "1", Kind: plugins.KindAgent, Role: Tapestry}, nil
}

// Handle carries out the task in req.Data (a TaskPayload).
func (TapestryAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	var task TaskPayload
	if err := json.Unmarshal(req.Data, &task); err != nil {
		return plugins.AgentResponse{Error: fmt.Sprintf("tapestry expects a plan task in the request data: %v", err)}, nil
	}
	if len(task.Scripts) == 0 {
		return plugins.AgentResponse{Error: fmt.Sprintf("task %s has no sh or bash blocks: %v", plans.TaskLabel(task.Number, task.Title), ErrNeedsModel)}, nil
	}
	return RunRunbook(ctx, h, task)
}

var _ plugins.Agent = TapestryAgent{}
