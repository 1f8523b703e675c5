package chat

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/plugins"
)

// fallbackDoor is a door whose model section is first (Anthropic wire, at
// first.URL) and whose entry "second" (OpenAI wire) is every agent's
// fallback.
func fallbackDoor(t *testing.T, first, second *modeltest.Server, window int) *Door {
	t.Helper()
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "anthropic", Name: "first-model", BaseURL: first.URL, ContextWindow: window, Fallback: []string{"second"}}
	cfg.Models = map[string]config.ModelConfig{"second": {Provider: "openai", Name: "second-model", BaseURL: second.OpenAIURL()}}
	return New(Options{Project: t.TempDir(), Config: cfg, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
}

// The reasons to leave a model (a 5xx past its retries, no such model,
// overloaded) move the call to the fallback, the conversation converted
// from the Anthropic wire to the OpenAI one; a refused key does not.
func TestDoorFallsBack(t *testing.T) {
	chat := plugins.ChatRequest{Messages: []plugins.ChatMessage{
		{Role: plugins.RoleUser, Content: "read it"},
		{Role: plugins.RoleAssistant, ToolCalls: []plugins.ToolCall{{ID: "toolu_1", Tool: "read", Args: map[string]any{"path": "a.txt"}}}},
		{Role: plugins.RoleTool, ToolCallID: "toolu_1", Content: "the content of a.txt"},
	}}
	tests := []struct {
		name   string
		fail   modeltest.Turn
		reason string
	}{
		{"5xx", modeltest.Turn{Default: true, Status: 503, RetryAfter: "0", Error: "upstream down"}, "failing (503)"},
		{"no such model", modeltest.Turn{Status: 404, ErrorType: "not_found_error", Error: "model: first-model"}, "no such model (404)"},
		{"overloaded", modeltest.Turn{Default: true, Status: 529, RetryAfter: "0", ErrorType: "overloaded_error", Error: "Overloaded"}, "overloaded (529)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := modeltest.NewServer(t, tt.fail)
			second := modeltest.NewServer(t, modeltest.Turn{Text: "it says hi"})
			d := fallbackDoor(t, first, second, 0)
			var seen []Event
			window := 0
			defer d.Observe(func(ev Event) {
				if ev.Type == ModelFallback {
					seen = append(seen, ev)
				}
				if ev.Type == ModelUsage {
					window = ev.ContextWindow
				}
			})()
			resp, err := d.Complete(context.Background(), "s1", agents.Loom, chat)
			if err != nil || resp.Message.Content != "it says hi" {
				t.Fatalf("Complete() = %q, %v; want the fallback's answer", resp.Message.Content, err)
			}
			if len(seen) != 1 || *seen[0].Fallback != (Fallback{From: "first-model", To: "second", Reason: tt.reason}) {
				t.Errorf("model.fallback events = %+v, want one from first-model to second, %s", seen, tt.reason)
			}
			if window != 128_000 {
				t.Errorf("model.usage's window = %d, want the fallback's (openai's 128000), not the first model's", window)
			}
			body := string(second.Requests()[0].Body)
			for _, w := range []string{`"tool_calls":[{"id":"toolu_1"`, `"role":"tool"`, `"tool_call_id":"toolu_1"`, "the content of a.txt", `"model":"second-model"`} {
				if !strings.Contains(body, w) {
					t.Errorf("the fallback's request lacks %s:\n%s", w, body)
				}
			}
		})
	}
	t.Run("a refused key is not a reason", func(t *testing.T) {
		first := modeltest.NewServer(t, modeltest.Turn{Status: 401, Error: "invalid x-api-key"})
		second := modeltest.NewServer(t, modeltest.Turn{Text: "never"})
		d := fallbackDoor(t, first, second, 0)
		if _, err := d.Complete(context.Background(), "s1", agents.Loom, chat); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("Complete() error = %v, want the 401", err)
		}
		if n := len(second.Requests()); n != 0 {
			t.Errorf("the fallback got %d requests, want none", n)
		}
	})
}

// A conversation too long for the window is compacted and tried again on
// the same model, as without a fallback: the fallback is not asked.
func TestDoorCompactsBeforeFallingBack(t *testing.T) {
	first := modeltest.NewServer(t,
		modeltest.Turn{Status: 400, Error: "prompt is too long: 1200 tokens > 1000 maximum"},
		modeltest.Turn{Text: "SUMMARY: a question."},
		modeltest.Turn{Text: "the answer"})
	second := modeltest.NewServer(t, modeltest.Turn{Text: "never"})
	d := fallbackDoor(t, first, second, 1000)
	history := []plugins.ChatMessage{
		{Role: plugins.RoleUser, Content: "first question " + strings.Repeat("x ", 200)},
		{Role: plugins.RoleAssistant, Content: "first answer " + strings.Repeat("y ", 200)},
		{Role: plugins.RoleUser, Content: "second question"},
	}
	resp, err := d.Complete(context.Background(), "s1", agents.Loom, plugins.ChatRequest{Messages: history})
	if err != nil || resp.Message.Content != "the answer" {
		t.Fatalf("Complete() = %q, %v; want the answer after compaction", resp.Message.Content, err)
	}
	if n := len(second.Requests()); n != 0 {
		t.Errorf("the fallback got %d requests, want none", n)
	}
}

// An agent's own list, even an empty one, replaces model.fallback; a
// category's applies to its Shuttle.
func TestFallbackChains(t *testing.T) {
	e := t.TempDir()
	cfg, _, err := config.Load(config.Options{UserConfigDir: e})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.Fallback = []string{"fast"}
	cfg.Agents = map[string]config.AgentConfig{"thread": {Fallback: []string{}}, "loom": {Fallback: []string{"deep", "fast"}}}
	cfg.Categories = map[string]config.CategoryConfig{"frontend": {Fallback: []string{"deep"}}}
	f := newFallbacks(cfg)
	for agent, want := range map[string]string{"thread": "", "loom": "deep,fast", "shuttle-frontend": "deep", "pattern": "fast"} {
		if got := strings.Join(f.of(agent), ","); got != want {
			t.Errorf("fallback of %s = %q, want %q", agent, got, want)
		}
	}
}
