package hooks

import (
	"slices"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/plugins"
)

// claudeDocumented is every hook event Claude Code documents, in the order
// of its reference: config's list, the one place that spells them. Config
// accepts each of them (a settings file pasted from Claude Code loads); the
// ones Weave does not fire (see claudeEvents) are a warning naming them,
// never a failed load.
var claudeDocumented = config.HookEvents()

// claudeBinding is how one Claude Code event runs in Weave: on which Weave
// event, for which of them, and what its input adds to the common fields.
type claudeBinding struct {
	// weave is the Weave event the hook runs on.
	weave string
	// fires picks the Weave events that are this Claude event; nil is all.
	fires func(plugins.Event) bool
	// input fills the event's own fields; nil adds none.
	input func(*claudeInput, plugins.Event)
	// tools, when set, are the only tools the hook runs for, whatever its
	// matcher; matchOn is then what the matcher is matched against.
	tools   []string
	matchOn func(plugins.Event) string
}

// claudeEvents is the one registration of the Claude Code events Weave
// fires. The events added beside Claude Code's first seven each keep their
// binding in a file of their own (claude_<event>.go).
var claudeEvents = map[string]claudeBinding{
	ClaudePreToolUse:         {weave: plugins.EventToolExecuteBefore},
	ClaudePostToolUse:        postToolUse,
	ClaudeUserPromptSubmit:   userPromptSubmit,
	ClaudeStop:               {weave: plugins.EventSessionIdle},
	ClaudeSessionStart:       {weave: plugins.EventSessionStart},
	ClaudeSessionEnd:         {weave: plugins.EventSessionEnd},
	ClaudePreCompact:         {weave: plugins.EventSessionCompacting},
	ClaudePostToolUseFailure: postToolUseFailure,
	ClaudePostCompact:        postCompact,
	ClaudeTaskCompleted:      taskCompleted,
	ClaudeSubagentStart:      subagentStart,
	ClaudeSubagentStop:       subagentStop,
	ClaudeNotification:       notification,
	ClaudePermissionRequest:  {weave: plugins.EventPermissionRequest},
}

// ClaudeEventNames lists every Claude Code event config accepts: all the
// documented ones, fired or not.
func ClaudeEventNames() []string { return slices.Clone(claudeDocumented) }

// ClaudeFiredEventNames lists the Claude Code events Weave fires, in the
// documented order.
func ClaudeFiredEventNames() []string {
	var out []string
	for _, n := range claudeDocumented {
		if _, ok := claudeEvents[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// ClaudeFired reports whether Weave fires the Claude Code event name.
func ClaudeFired(name string) bool {
	_, ok := claudeEvents[name]
	return ok
}

// ClaudeHookTypes lists the hook handler types config accepts: those
// Weave runs (ClaudeRunTypes) and Claude Code's others, which are a
// warning.
func ClaudeHookTypes() []string { return []string{"command", "http", "prompt", "agent", "mcp_tool"} }

// ClaudeRunTypes lists the handler types Weave runs.
func ClaudeRunTypes() []string { return []string{"command", "http"} }

// fires reports whether the binding of claude runs on ev.
func claudeFires(claude string, ev plugins.Event) bool {
	b, ok := claudeEvents[claude]
	return ok && ev.Name == b.weave && (b.fires == nil || b.fires(ev))
}
