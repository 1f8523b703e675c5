package chat

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

// Tool event types: a tool call starting and ending, as observers see them
// beside the model's events.
const (
	// ToolStart says an agent's tool call begins (tool, short args).
	ToolStart = "tool.start"
	// ToolResult ends it: allowed or denied, an error, the result's size.
	ToolResult = "tool.result"
)

// maxShortArgs bounds the arguments shown with a tool call.
const maxShortArgs = 72

// WatchTool streams a tool call the tools saw as a model event (tool.start,
// tool.result): the tools.WithWatch of the host.
func (d *Door) WatchTool(a tools.Activity) {
	if d == nil {
		return
	}
	ev := Event{Type: ToolStart, Session: a.Session, Agent: a.Caller.Role(), Tool: a.Call.Tool, ToolID: a.Call.ID,
		Args: ShortArgs(a.Call.Tool, a.Call.Args)}
	if a.Result != nil {
		ev.Type = ToolResult
		ev.Size = len(a.Result.Output)
		ev.Denied = a.Result.Denied
		ev.IsError = a.Result.IsError
		if a.Err != nil {
			ev.IsError, ev.Error = true, a.Err.Error()
		} else if a.Result.Denied || a.Result.IsError {
			ev.Error = clipLine(a.Result.Output, 160)
		}
	}
	d.emit(context.Background(), ev)
}

// ShortArgs shows a tool call's arguments on one short line: the argument
// that says what the call is about first (a path, a command, a pattern, the
// agent a task goes to), then the others' names and values.
func ShortArgs(tool string, args map[string]any) string {
	first := map[string]string{
		plugins.ToolRead: "path", plugins.ToolWrite: "path", plugins.ToolEdit: "path",
		plugins.ToolBash: "command", plugins.ToolGlob: "pattern", plugins.ToolGrep: "pattern",
		plugins.ToolWebFetch: "url", plugins.ToolTask: "agent", plugins.ToolPlanCheck: "task",
	}[tool]
	var parts []string
	if v, ok := args[first]; ok {
		parts = append(parts, fmt.Sprint(v))
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		if k != first {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s, ok := args[k].(string); ok {
			parts = append(parts, k+"="+s)
		} else {
			parts = append(parts, fmt.Sprintf("%s=%v", k, args[k]))
		}
	}
	return clipLine(strings.Join(parts, " "), maxShortArgs)
}

// clipLine keeps s on one line of at most n runes.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
