package model

import (
	"sync"

	"github.com/anthropics/anthropic-sdk-go"
)

// thoughts keeps the thinking blocks of Anthropic answers that called
// tools, by the first tool call's id. The contract's messages carry no
// thinking, but with extended thinking on the API wants an answer's
// thinking sent back, signed and unchanged, while its tool calls are
// answered; the tool call id finds it again. It holds the newest
// maxThoughts answers, which outlasts any tool loop in flight.
type thoughts struct {
	mu    sync.Mutex
	byID  map[string][]anthropic.ContentBlockParamUnion
	order []string
}

const maxThoughts = 512

func newThoughts() *thoughts {
	return &thoughts{byID: map[string][]anthropic.ContentBlockParamUnion{}}
}

// keep remembers m's thinking when m called a tool.
func (t *thoughts) keep(m *anthropic.Message) {
	var blocks []anthropic.ContentBlockParamUnion
	first := ""
	for _, b := range m.Content {
		switch b.Type {
		case "thinking":
			blocks = append(blocks, anthropic.NewThinkingBlock(b.Signature, b.Thinking))
		case "redacted_thinking":
			blocks = append(blocks, anthropic.NewRedactedThinkingBlock(b.Data))
		case "tool_use":
			if first == "" {
				first = b.ID
			}
		}
	}
	if first == "" || len(blocks) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byID[first]; !ok {
		t.order = append(t.order, first)
	}
	t.byID[first] = blocks
	for len(t.order) > maxThoughts {
		delete(t.byID, t.order[0])
		t.order = t.order[1:]
	}
}

// of is the thinking of the answer whose first tool call is id; nil when
// none is kept.
func (t *thoughts) of(id string) []anthropic.ContentBlockParamUnion {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}
