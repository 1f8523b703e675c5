package host

import (
	"context"
	"errors"
	"log/slog"

	"github.com/weavehq/weave/plugins"
)

// AgentDelegator carries out the task tool in this process: the delegated
// agent's plugin handles the prompt with host services bound to the extended
// caller chain, so that the capability gate's ceiling holds through the
// delegation. (Over a bus, BusDelegator does the same across processes.)
type AgentDelegator struct {
	// Agent returns the agent plugin of a role, e.g. a supervisor's.
	Agent func(role string) plugins.Agent
	// Tools are the host's tools; set it once NewTools has returned.
	Tools   *Tools
	Session string
	Logger  *slog.Logger
}

// Delegate implements Delegator.
func (d *AgentDelegator) Delegate(ctx context.Context, caller Caller, agent, prompt string) (string, error) {
	if d.Tools == nil || d.Agent == nil {
		return "", errors.New("delegation is not wired in this run")
	}
	logger := d.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	callee := caller.Delegated(agent)
	services := &PluginServices{Logger: logger.With("agent", agent, "chain", callee.String()), ToolFunc: d.Tools.For(callee, d.Session)}
	resp, err := d.Agent(agent).Handle(ctx, services, plugins.AgentRequest{SessionID: d.Session, Prompt: prompt})
	if err != nil {
		return "", err
	}
	if resp.Error != "" {
		return "", errors.New(resp.Error)
	}
	return resp.Output, nil
}

var _ Delegator = (*AgentDelegator)(nil)
