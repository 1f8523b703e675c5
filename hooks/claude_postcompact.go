package hooks

import "github.com/weavehq/weave/plugins"

// ClaudePostCompact runs once a conversation has been compacted; its
// input carries the summary that replaced the older messages.
const ClaudePostCompact = "PostCompact"

var postCompact = claudeBinding{
	weave: plugins.EventSessionCompacted,
	input: func(in *claudeInput, ev plugins.Event) {
		in.Trigger = dataString(ev, "trigger", "auto")
		in.CompactSummary = dataString(ev, "summary", "")
	},
}
