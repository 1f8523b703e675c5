package model_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/plugins"
)

const testKey = "sk-test-secret-0123456789"

var providers = []string{"openai", "anthropic"}

// open builds a provider of kind against srv, through FromConfig as the
// host does, with the key in a variable of its own.
func open(t *testing.T, kind string, srv *modeltest.Server) model.Provider {
	t.Helper()
	base := srv.URL
	if kind == "openai" {
		base = srv.OpenAIURL()
	}
	s, err := model.FromConfig(config.ModelConfig{Provider: kind, Name: "test-model", BaseURL: base, APIKeyEnv: "TEST_MODEL_KEY"},
		func(k string) string {
			if k == "TEST_MODEL_KEY" {
				return testKey
			}
			return ""
		})
	if err != nil {
		t.Fatal(err)
	}
	s.MaxRetries = 2
	p, err := model.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func userChat(text string) plugins.ChatRequest {
	return plugins.ChatRequest{System: "You are terse.", Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: text}}}
}

type deltas struct {
	mu    sync.Mutex
	text  []string
	calls []plugins.ToolCall
}

func (d *deltas) on(x model.Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if x.ToolCall != nil {
		d.calls = append(d.calls, *x.ToolCall)
	} else {
		d.text = append(d.text, x.Text)
	}
}

func TestStreamingTextArrivesBeforeTheTurnEnds(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			hold := make(chan struct{})
			srv := modeltest.NewServer(t, modeltest.Turn{Text: "Hello there, weaver.", Hold: hold,
				Usage: &modeltest.Usage{Input: 12, Output: 5}})
			var once sync.Once
			var got deltas
			// The server holds the rest of the stream until a delta has
			// reached us: a provider that buffered the whole answer would
			// never see one and the call would time out.
			resp, err := open(t, kind, srv).Complete(ctx(t), userChat("hi"), func(d model.Delta) {
				got.on(d)
				once.Do(func() { close(hold) })
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "Hello there, weaver." || resp.StopReason != "end" {
				t.Errorf("Complete() = %q stop %q, want the text and end", resp.Message.Content, resp.StopReason)
			}
			if len(got.text) < 2 || strings.Join(got.text, "") != resp.Message.Content {
				t.Errorf("deltas = %q, want several pieces adding up to the answer", got.text)
			}
			if resp.Usage.InputTokens != 12 || resp.Usage.OutputTokens != 5 {
				t.Errorf("usage = %+v, want 12 in, 5 out", resp.Usage)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || !reqs[0].Stream || reqs[0].Model != "test-model" || reqs[0].APIKey != testKey {
				t.Errorf("requests = %+v, want one stream for test-model with the key from TEST_MODEL_KEY", reqs)
			}
		})
	}
}

func TestParallelToolCalls(t *testing.T) {
	for _, kind := range providers {
		for _, stream := range []bool{true, false} {
			name := kind + "/json"
			if stream {
				name = kind + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				srv := modeltest.NewServer(t, modeltest.Turn{Text: "Reading both.", ToolCalls: []modeltest.ToolCall{
					{ID: "c1", Name: "read", Args: `{"path":"go.mod"}`},
					{ID: "c2", Name: "grep", Args: `{"pattern":"func main","path":"."}`},
				}})
				var got deltas
				var on func(model.Delta)
				if stream {
					on = got.on
				}
				resp, err := open(t, kind, srv).Complete(ctx(t), userChat("look"), on)
				if err != nil {
					t.Fatal(err)
				}
				want := []plugins.ToolCall{
					{ID: "c1", Tool: "read", Args: map[string]any{"path": "go.mod"}},
					{ID: "c2", Tool: "grep", Args: map[string]any{"pattern": "func main", "path": "."}},
				}
				if diff := cmp.Diff(want, resp.Message.ToolCalls); diff != "" {
					t.Errorf("tool calls (-want +got):\n%s", diff)
				}
				if resp.StopReason != "tool_calls" || resp.Message.Content != "Reading both." {
					t.Errorf("stop %q, content %q; want tool_calls and the text", resp.StopReason, resp.Message.Content)
				}
				if stream {
					starts := []plugins.ToolCall{{ID: "c1", Tool: "read"}, {ID: "c2", Tool: "grep"}}
					if diff := cmp.Diff(starts, got.calls); diff != "" {
						t.Errorf("tool-call deltas (-want +got):\n%s", diff)
					}
				}
			})
		}
	}
}

// TestToolRoundTripOnTheWire: a chat with tool calls and their results is
// sent in each provider's own shape.
func TestToolRoundTripOnTheWire(t *testing.T) {
	temp := 0.2
	chat := plugins.ChatRequest{
		System: "sys",
		Messages: []plugins.ChatMessage{
			{Role: plugins.RoleUser, Content: "look"},
			{Role: plugins.RoleAssistant, ToolCalls: []plugins.ToolCall{
				{ID: "c1", Tool: "read", Args: map[string]any{"path": "a"}},
				{ID: "c2", Tool: "read", Args: map[string]any{"path": "b"}}}},
			{Role: plugins.RoleTool, ToolCallID: "c1", Content: "A"},
			{Role: plugins.RoleTool, ToolCallID: "c2", Content: "denied: read-only", IsError: true},
		},
		Tools: []plugins.ToolSpec{
			{Name: "read", Description: "Read a file", Schema: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "glob", Description: "List files", Schema: []byte(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}`)},
		},
		Temperature: &temp,
		MaxTokens:   321,
	}
	t.Run("openai", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "ok"})
		if _, err := open(t, "openai", srv).Complete(ctx(t), chat, nil); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name       string         `json:"name"`
					Parameters map[string]any `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
			Temperature float64 `json:"temperature"`
			MaxTokens   int     `json:"max_tokens"`
		}
		if err := srv.Requests()[0].Decode(&body); err != nil {
			t.Fatal(err)
		}
		roles := []string{}
		for _, m := range body.Messages {
			roles = append(roles, m.Role)
		}
		if diff := cmp.Diff([]string{"system", "user", "assistant", "tool", "tool"}, roles); diff != "" {
			t.Errorf("roles (-want +got):\n%s", diff)
		}
		if a := body.Messages[2]; len(a.ToolCalls) != 2 || a.ToolCalls[1].ID != "c2" || a.ToolCalls[1].Function.Arguments != `{"path":"b"}` {
			t.Errorf("assistant message = %+v, want both calls with JSON arguments", a)
		}
		if body.Messages[4].ToolCallID != "c2" || len(body.Tools) != 2 || body.Tools[0].Function.Parameters["required"] == nil {
			t.Errorf("tool result or tools wrong: %+v / %+v", body.Messages[4], body.Tools)
		}
		// A base_url other than OpenAI's gets max_tokens, which compatible
		// servers know.
		if body.Temperature != 0.2 || body.MaxTokens != 321 {
			t.Errorf("temperature %v, max_tokens %v; want 0.2 and 321", body.Temperature, body.MaxTokens)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "ok"})
		if _, err := open(t, "anthropic", srv).Complete(ctx(t), chat, nil); err != nil {
			t.Fatal(err)
		}
		var body struct {
			System []struct {
				Text         string         `json:"text"`
				CacheControl map[string]any `json:"cache_control"`
			} `json:"system"`
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string         `json:"type"`
					ID        string         `json:"id"`
					ToolUseID string         `json:"tool_use_id"`
					IsError   bool           `json:"is_error"`
					Input     map[string]any `json:"input"`
				} `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Name         string         `json:"name"`
				InputSchema  map[string]any `json:"input_schema"`
				CacheControl map[string]any `json:"cache_control"`
			} `json:"tools"`
			MaxTokens   int     `json:"max_tokens"`
			Temperature float64 `json:"temperature"`
		}
		if err := srv.Requests()[0].Decode(&body); err != nil {
			t.Fatal(err)
		}
		if len(body.System) != 1 || body.System[0].Text != "sys" || body.System[0].CacheControl["type"] != "ephemeral" {
			t.Errorf("system = %+v, want the prompt with a cache breakpoint", body.System)
		}
		if len(body.Tools) != 2 || body.Tools[0].CacheControl != nil || body.Tools[1].CacheControl["type"] != "ephemeral" {
			t.Errorf("tools = %+v, want a cache breakpoint on the last tool only", body.Tools)
		}
		if body.Tools[0].InputSchema["required"] == nil {
			t.Errorf("tool schema lost its required list: %+v", body.Tools[0].InputSchema)
		}
		// Two tool results share one user turn, as the API requires.
		if len(body.Messages) != 3 || body.Messages[2].Role != "user" || len(body.Messages[2].Content) != 2 {
			t.Fatalf("messages = %+v, want user, assistant, and one user turn with both results", body.Messages)
		}
		if r := body.Messages[2].Content[1]; r.Type != "tool_result" || r.ToolUseID != "c2" || !r.IsError {
			t.Errorf("second result = %+v, want an error result for c2", r)
		}
		if u := body.Messages[1].Content[0]; u.Type != "tool_use" || u.ID != "c1" || u.Input["path"] != "a" {
			t.Errorf("tool use = %+v", u)
		}
		if body.MaxTokens != 321 || body.Temperature != 0.2 {
			t.Errorf("max_tokens %d, temperature %v; want 321 and 0.2", body.MaxTokens, body.Temperature)
		}
	})
}

func TestUsageWithCacheTokens(t *testing.T) {
	u := &modeltest.Usage{Input: 100, Output: 20, CacheRead: 80, CacheWrite: 15}
	for _, kind := range providers {
		for _, stream := range []bool{true, false} {
			t.Run(kind, func(t *testing.T) {
				srv := modeltest.NewServer(t, modeltest.Turn{Text: "cached", Usage: u})
				var on func(model.Delta)
				if stream {
					on = func(model.Delta) {}
				}
				resp, err := open(t, kind, srv).Complete(ctx(t), userChat("hi"), on)
				if err != nil {
					t.Fatal(err)
				}
				want := plugins.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 80, CacheWriteTokens: 15}
				if kind == "openai" {
					want.CacheWriteTokens = 0 // OpenAI reports cache reads only
				}
				if resp.Usage != want {
					t.Errorf("stream=%v: usage = %+v, want %+v", stream, resp.Usage, want)
				}
			})
		}
	}
}

func TestRateLimitedThenSuccessHonoursRetryAfter(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := modeltest.NewServer(t,
				modeltest.Turn{Status: 429, Error: "slow down", RetryAfter: "1"},
				modeltest.Turn{Text: "made it"})
			resp, err := open(t, kind, srv).Complete(ctx(t), userChat("hi"), func(model.Delta) {})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "made it" {
				t.Errorf("content = %q, want the second turn's", resp.Message.Content)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			// A lower bound only: the retry waited for the server's word.
			if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 900*time.Millisecond {
				t.Errorf("retry came %v after the 429, want about the 1s Retry-After asked for", gap)
			}
		})
	}
}

func TestErrorsSayWhatToChange(t *testing.T) {
	tests := []struct {
		name string
		turn modeltest.Turn
		want []string
		is   error
	}{
		{"401", modeltest.Turn{Status: 401, Error: "invalid x-api-key"}, []string{"401", "TEST_MODEL_KEY", "model.api_key_env"}, nil},
		{"404", modeltest.Turn{Status: 404, Error: "model: test-model", ErrorType: "model_not_found"}, []string{"404", `"test-model"`, "model.name"}, nil},
		{"context", modeltest.Turn{Status: 400, Error: "prompt is too long: 210000 tokens > 200000 maximum", ErrorType: "context_length_exceeded"},
			[]string{"400", "context window", "compact"}, model.ErrContextTooLong},
		{"500 after retries", modeltest.Turn{Status: 500, Error: "boom", RetryAfter: "0"}, []string{"500", "after 3 requests"}, nil},
	}
	for _, kind := range providers {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				turns := []modeltest.Turn{tt.turn}
				if tt.turn.Status >= 500 {
					turns = []modeltest.Turn{tt.turn, tt.turn, tt.turn}
				}
				srv := modeltest.NewServer(t, turns...)
				_, err := open(t, kind, srv).Complete(ctx(t), userChat("hi"), func(model.Delta) {})
				if err == nil {
					t.Fatal("Complete() succeeded, want an error")
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("error %q contains the API key", err)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
				}
				var api *model.APIError
				if !errors.As(err, &api) || api.Status != tt.turn.Status {
					t.Errorf("error %v is not an APIError with status %d", err, tt.turn.Status)
				}
			})
		}
	}
}

// TestCompatibleServerDialects: tool calls streamed without index or id
// (Ollama), or with arguments in pieces without an index (llama.cpp), with
// finish_reason "stop" and no usage, still come out as the calls asked for.
func TestCompatibleServerDialects(t *testing.T) {
	calls := []modeltest.ToolCall{{Name: "glob", Args: `{"pattern":"**/*.go"}`}, {Name: "read", Args: `{"path":"main.go"}`}}
	for _, dialect := range []string{"ollama", "llamacpp"} {
		t.Run(dialect, func(t *testing.T) {
			srv := modeltest.NewServer(t, modeltest.Turn{ToolCalls: calls, Dialect: dialect})
			var got deltas
			resp, err := open(t, "openai", srv).Complete(ctx(t), userChat("find main"), got.on)
			if err != nil {
				t.Fatal(err)
			}
			tc := resp.Message.ToolCalls
			if len(tc) != 2 || tc[0].Tool != "glob" || tc[0].Args["pattern"] != "**/*.go" || tc[1].Tool != "read" || tc[1].Args["path"] != "main.go" {
				t.Fatalf("tool calls = %+v, want glob then read with their arguments", tc)
			}
			if tc[0].ID == "" || tc[0].ID == tc[1].ID {
				t.Errorf("tool call ids %q and %q, want two distinct ids", tc[0].ID, tc[1].ID)
			}
			if len(got.calls) != 2 || got.calls[0].ID != tc[0].ID || got.calls[1].ID != tc[1].ID {
				t.Errorf("tool-call deltas = %+v, want the same two calls", got.calls)
			}
			if resp.StopReason != "tool_calls" {
				t.Errorf("stop reason = %q, want tool_calls", resp.StopReason)
			}
			if resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 {
				t.Errorf("usage = %+v, want an estimate when the server sends none", resp.Usage)
			}
		})
	}
}

func TestFinishReasonSpellings(t *testing.T) {
	for reason, want := range map[string]string{"eos": "end", "stop": "end", "length": "max_tokens", "content_filter": "content_filter"} {
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "x", StopReason: reason})
		resp, err := open(t, "openai", srv).Complete(ctx(t), userChat("hi"), func(model.Delta) {})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StopReason != want {
			t.Errorf("finish_reason %q: StopReason = %q, want %q", reason, resp.StopReason, want)
		}
	}
}

func TestFromConfigNamesTheKeysToSet(t *testing.T) {
	none := func(string) string { return "" }
	tests := []struct {
		name string
		cfg  config.ModelConfig
		want []string
	}{
		{"no provider", config.ModelConfig{Provider: "none"}, []string{"model.provider", "model.name", "WEAVE_MODEL_PROVIDER"}},
		{"no name", config.ModelConfig{Provider: "openai"}, []string{"model.name", "WEAVE_MODEL_NAME"}},
		{"empty key", config.ModelConfig{Provider: "anthropic", Name: "claude-x"}, []string{"ANTHROPIC_API_KEY", "model.api_key_env"}},
		{"empty custom key", config.ModelConfig{Provider: "openai", Name: "gpt-x", APIKeyEnv: "MY_KEY"}, []string{"MY_KEY", "model.api_key_env"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.FromConfig(tt.cfg, none)
			if err == nil {
				t.Fatal("FromConfig() succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("FromConfig() error %q does not name %q", err, w)
				}
			}
		})
	}
	if _, err := model.FromConfig(config.ModelConfig{Provider: "none"}, none); !errors.Is(err, plugins.ErrNoModel) {
		t.Errorf("no provider: %v is not plugins.ErrNoModel", err)
	}
	// A local server needs no key.
	s, err := model.FromConfig(config.ModelConfig{Provider: "openai", Name: "qwen3", BaseURL: "http://127.0.0.1:11434/v1"}, none)
	if err != nil || s.KeyEnv != "OPENAI_API_KEY" || s.APIKey != "" {
		t.Errorf("FromConfig(local server) = %+v, %v; want no key and the default variable", s, err)
	}
}

func TestModelsListsWhatTheServerServes(t *testing.T) {
	srv := modeltest.NewServer(t)
	srv.SetModels("small", "large")
	for _, provider := range []string{"openai", "anthropic"} {
		base := srv.URL
		if provider == "openai" {
			base = srv.OpenAIURL()
		}
		p, err := model.New(model.Settings{Provider: provider, Name: "small", BaseURL: base})
		if err != nil {
			t.Fatal(err)
		}
		got, err := model.Models(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", provider, err)
		}
		if !slices.Equal(got, []string{"small", "large"}) {
			t.Errorf("%s: Models = %q, want small and large", provider, got)
		}
	}
	if srv.Remaining() != 0 || len(srv.Requests()) != 0 {
		t.Error("listing models used scripted turns")
	}
}

// An error says how many requests the call made, not how many retries
// were allowed: a provider that says not to retry is asked once.
func TestErrorCountsTheRequestsMade(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			var hits atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Should-Retry", "false")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"down for maintenance"}}`))
			}))
			t.Cleanup(ts.Close)
			base := ts.URL
			if kind == "openai" {
				base += "/v1"
			}
			s, err := model.FromConfig(config.ModelConfig{Provider: kind, Name: "test-model", BaseURL: base, APIKeyEnv: "K"},
				func(string) string { return testKey })
			if err != nil {
				t.Fatal(err)
			}
			p, err := model.New(s)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(ctx(t), userChat("hi"), nil)
			if err == nil {
				t.Fatal("Complete() succeeded on a 503")
			}
			if n := hits.Load(); n != 1 || !strings.Contains(err.Error(), "on its only request") || strings.Contains(err.Error(), "retries") {
				t.Errorf("%d request(s); error %q, want one request said as such", n, err)
			}
		})
	}
}
