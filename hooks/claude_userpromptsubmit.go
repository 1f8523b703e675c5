package hooks

import "github.com/weavehq/weave/plugins"

// userPromptSubmit runs once on each thing a person wrote: not on the
// model's own answers (chat.message with source "assistant"), nor on the
// prompts weave writes itself (a task handed over, a continuation, a
// delegation), nor a second time on a message the hooks already heard as
// it was typed during a run (data "announced" on the turn carrying it).
var userPromptSubmit = claudeBinding{
	weave: plugins.EventChatMessage,
	fires: func(ev plugins.Event) bool {
		return fromUser(ev) && ev.Data["announced"] != true
	},
}
