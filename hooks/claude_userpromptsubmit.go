package hooks

import "github.com/weavehq/weave/plugins"

// userPromptSubmit runs on what a person wrote only: not on the model's
// own answers (chat.message with source "assistant"), nor on the prompts
// weave writes itself (a task handed over, a continuation, a delegation).
var userPromptSubmit = claudeBinding{
	weave: plugins.EventChatMessage,
	fires: func(ev plugins.Event) bool {
		return fromUser(ev) && ev.Data["queued"] != true
	},
}
