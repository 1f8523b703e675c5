package hooks

import (
	"context"
	"regexp"

	"github.com/weavehq/weave/plugins"
)

// KeywordDetectorID names the keyword detector.
const KeywordDetectorID = "weave.keyword-detector"

// UltraworkInstruction is the context added when a message asks for
// ultrawork.
const UltraworkInstruction = "Ultrawork requested: keep working until the plan is done. " +
	"Do not stop to ask for confirmation between tasks; finish each task, verify it, tick it, " +
	"and continue with the next unchecked one until every task is complete or you are truly blocked."

var ultraworkRE = regexp.MustCompile(`(?i)\b(?:ultrawork|ulw)\b`)

// KeywordDetector adds the ultrawork instruction when a user message holds
// "ultrawork" or "ulw" as a word (any case).
type KeywordDetector struct{}

// NewKeywordDetector returns the detector.
func NewKeywordDetector() *KeywordDetector { return &KeywordDetector{} }

func (h *KeywordDetector) info() plugins.Info {
	return builtinInfo(KeywordDetectorID, PriorityContext, plugins.EventChatMessage)
}

func (h *KeywordDetector) registered() Registered { return builtinRegistered(h, h.info(), FailDefault) }

// Info describes the hook.
func (h *KeywordDetector) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// Handle looks for the keywords in a user message.
func (h *KeywordDetector) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Name != plugins.EventChatMessage || !fromUser(ev) || !ultraworkRE.MatchString(ev.Message) {
		return allow, nil
	}
	return withContext(UltraworkInstruction), nil
}

// fromUser reports whether a chat.message came from the user, not from the
// host itself (a continuation prompt carries data source "continuation").
func fromUser(ev plugins.Event) bool {
	src, _ := ev.Data["source"].(string)
	return src == "" || src == "user"
}

var _ plugins.Hook = (*KeywordDetector)(nil)
