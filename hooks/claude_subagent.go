package hooks

import (
	"strings"

	"github.com/weavehq/weave/plugins"
)

// SubagentStart and SubagentStop run around a delegation: a task tool call
// that hands work to another agent. SubagentStart runs as the call is about
// to start (with PreToolUse; it cannot block, as in Claude Code),
// SubagentStop once the delegated agent has answered. The matcher is
// matched against the delegated agent's name (agent_type), not a tool
// name; agent_id is the task call's id.
const (
	ClaudeSubagentStart = "SubagentStart"
	ClaudeSubagentStop  = "SubagentStop"
)

// delegatedAgent is the agent a task call hands work to.
func delegatedAgent(ev plugins.Event) string {
	s, _ := ev.Args["agent"].(string)
	return strings.ToLower(strings.TrimSpace(s))
}

func isTask(ev plugins.Event) bool { return ev.Tool == plugins.ToolTask }

func subagentInput(in *claudeInput, ev plugins.Event) {
	in.AgentType = delegatedAgent(ev)
	in.AgentID = dataString(ev, "tool_use_id", "")
}

var subagentStart = claudeBinding{
	weave:   plugins.EventToolExecuteBefore,
	fires:   isTask,
	tools:   []string{plugins.ToolTask},
	matchOn: delegatedAgent,
	input:   subagentInput,
}

var subagentStop = claudeBinding{
	weave:   plugins.EventToolExecuteAfter,
	fires:   isTask,
	tools:   []string{plugins.ToolTask},
	matchOn: delegatedAgent,
	input: func(in *claudeInput, ev plugins.Event) {
		subagentInput(in, ev)
		active := false
		in.StopHookActive = &active
		if ev.Result != nil {
			in.LastAssistantMessage = ev.Result.Output
		}
	},
}
