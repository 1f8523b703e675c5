package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolTask, func(ctx context.Context, t *Tools, c call) (plugins.ToolResult, error) {
		return t.task(ctx, c.caller, c.session, c.id, c.args)
	})
}

func (t *Tools) task(ctx context.Context, c Caller, session, id string, args map[string]any) (plugins.ToolResult, error) {
	agent, err := stringArg(args, argAgent, true)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	prompt, err := stringArg(args, argPrompt, true)
	if err != nil {
		return failf("task: %v; give the agent a self-contained instruction", err)
	}
	if t.delegator == nil {
		return failf("task: delegation is not available in this run; do the work yourself")
	}
	agent = strings.ToLower(strings.TrimSpace(agent))
	// The delegated agent works in a session of its own, linked to this
	// one: its conversation is its own, and a listing shows the tree.
	child := ChildSession(session, agent)
	if t.link != nil {
		t.link(session, child, c.Role(), id)
	}
	answer, err := t.delegator.Delegate(ctx, c, child, agent, prompt)
	if ctx.Err() != nil {
		return plugins.ToolResult{}, fmt.Errorf("task %s: %w", agent, ctx.Err())
	}
	if err != nil {
		return failf("task: %s could not finish: %v", agent, err)
	}
	return ok("%s", answer)
}
