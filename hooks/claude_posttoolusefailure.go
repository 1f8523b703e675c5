package hooks

import "github.com/weavehq/weave/plugins"

// ClaudePostToolUseFailure runs after a tool call that failed (its result
// is an error); PostToolUse runs after one that succeeded, as in Claude
// Code.
const ClaudePostToolUseFailure = "PostToolUseFailure"

func toolFailed(ev plugins.Event) bool { return ev.Result != nil && ev.Result.IsError }

var postToolUse = claudeBinding{
	weave: plugins.EventToolExecuteAfter,
	fires: func(ev plugins.Event) bool { return !toolFailed(ev) },
}

var postToolUseFailure = claudeBinding{
	weave: plugins.EventToolExecuteAfter,
	fires: toolFailed,
	input: func(in *claudeInput, ev plugins.Event) {
		in.ToolName = ClaudeToolName(ev.Tool)
		in.ToolInput = ClaudeToolInput(ev.Tool, ev.Args, ev.Cwd)
		if in.ToolInput == nil {
			in.ToolInput = map[string]any{}
		}
		in.ToolUseID = dataString(ev, "tool_use_id", "")
		if ev.Result != nil {
			in.Error = ev.Result.Output
		}
	},
}
