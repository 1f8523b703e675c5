package modeltest

import (
	"bytes"
	"encoding/json"
	"strings"
)

// A script read once in order breaks as soon as one request more than
// expected arrives (a nudge, a retry, a compaction): every later turn goes
// to the wrong request. A turn may therefore say which requests it is for
// (Match, Agent, AfterTool), and a Default turn is never used up, so a
// script can answer what it did not foresee.

// matches reports whether turn t is for the request body in format.
func (t Turn) matches(format string, body []byte) bool {
	if t.Match != "" && !bytes.Contains(body, []byte(t.Match)) {
		return false
	}
	if t.Agent != "" && !mentionsAgent(body, t.Agent) {
		return false
	}
	if t.AfterTool != "" {
		last, ok := lastToolResult(format, body)
		if !ok || !strings.Contains(last, t.AfterTool) {
			return false
		}
	}
	return true
}

// mentionsAgent reports whether the request is an agent's: Weave's role
// prompts introduce the agent as "You are Loom", "You are Tapestry"...
func mentionsAgent(body []byte, agent string) bool {
	return bytes.Contains(bytes.ToLower(body), []byte("you are "+strings.ToLower(agent)))
}

// lastToolResult is the text of the request's last message when that
// message carries tool results (their texts joined), for either format.
func lastToolResult(format string, body []byte) (string, bool) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return "", false
	}
	last := req.Messages[len(req.Messages)-1]
	if format == "openai" {
		if last.Role != "tool" {
			return "", false
		}
		return contentText(last.Content), true
	}
	// Anthropic: a user message whose blocks are tool_result blocks.
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if last.Role != "user" || json.Unmarshal(last.Content, &blocks) != nil {
		return "", false
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "tool_result" {
			texts = append(texts, contentText(b.Content))
		}
	}
	return strings.Join(texts, "\n"), len(texts) > 0
}

// contentText is a message content's text: a string, or the text of its
// blocks.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var texts []string
	for _, b := range blocks {
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "\n")
}

// pick chooses the turn for a request: the first unused turn it matches,
// else the first default turn it matches; -1 when none. s.mu is held.
func (s *Server) pick(format string, body []byte) (int, Turn) {
	for i, t := range s.turns {
		if !t.Default && !s.used[i] && t.matches(format, body) {
			s.used[i] = true
			return i, t
		}
	}
	for i, t := range s.turns {
		if t.Default && t.matches(format, body) {
			return i, t
		}
	}
	return -1, Turn{}
}
