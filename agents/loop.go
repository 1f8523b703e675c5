package agents

import (
	"context"
	"fmt"

	"github.com/weavehq/weave/plugins"
)

// DefaultMaxTurns bounds the model turns of one request, so that a model
// that keeps calling tools cannot run forever.
const DefaultMaxTurns = 50

// ModelAgent is a role that thinks with a model. It asks the host's model
// for the next step, runs the tool calls the model asks for through the host
// (where the capability gate and the tool hooks apply), feeds the results
// back, and stops when the model answers without calling a tool.
type ModelAgent struct {
	Role Role
	// MaxTurns bounds the model turns; zero means DefaultMaxTurns.
	MaxTurns int
}

// AgentID is the built-in plugin ID of a role.
func AgentID(role string) string { return "weave.agent." + role }

// Info describes the agent as a plugin.
func (a ModelAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: AgentID(a.Role.Name), Version: "1", Kind: plugins.KindAgent, Role: a.Role.Name}, nil
}

// Handle runs the agent loop on req.Prompt.
func (a ModelAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	turns := a.MaxTurns
	if turns <= 0 {
		turns = DefaultMaxTurns
	}
	temp := a.Role.Temperature
	chat := plugins.ChatRequest{
		System:      a.Role.Prompt,
		Messages:    []plugins.ChatMessage{{Role: plugins.RoleUser, Content: req.Prompt}},
		Tools:       ToolSpecs(a.Role.Tools),
		Temperature: &temp,
	}
	for range turns {
		resp, err := h.Complete(ctx, chat)
		if err != nil {
			// No model, or the provider failed: a domain outcome the caller
			// shows, not a broken transport.
			return plugins.AgentResponse{Error: fmt.Sprintf("%s: %v", a.Role.Name, err)}, nil
		}
		chat.Messages = append(chat.Messages, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			return plugins.AgentResponse{Output: resp.Message.Content, Done: true}, nil
		}
		for _, call := range resp.Message.ToolCalls {
			res, err := h.CallTool(ctx, call)
			if err != nil {
				return plugins.AgentResponse{}, err
			}
			chat.Messages = append(chat.Messages, plugins.ChatMessage{
				Role: plugins.RoleTool, ToolCallID: call.ID, Content: res.Output, IsError: res.IsError,
			})
		}
	}
	return plugins.AgentResponse{Error: fmt.Sprintf("%s stopped after %d model turns without finishing", a.Role.Name, turns)}, nil
}

var _ plugins.Agent = ModelAgent{}
