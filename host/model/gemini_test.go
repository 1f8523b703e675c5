package model

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/plugins"
)

// Gemini is the OpenAI wire at Google's endpoint: the key as a bearer
// token, max_tokens, and the thinking budget beside the OpenAI fields.
func TestGeminiSpeaksTheOpenAIWire(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "hi"})
	p, err := New(Settings{Provider: "gemini", Name: "gemini-2.5-flash", BaseURL: srv.OpenAIURL(), APIKey: "g-key", ThinkingBudget: 1024})
	if err != nil {
		t.Fatal(err)
	}
	temp := 0.3
	resp, err := p.Complete(context.Background(), plugins.ChatRequest{MaxTokens: 500, Temperature: &temp,
		Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "hello"}}}, nil)
	if err != nil || resp.Message.Content != "hi" {
		t.Fatalf("Complete() = %q, %v", resp.Message.Content, err)
	}
	r := srv.Requests()[0]
	var body struct {
		Model       string   `json:"model"`
		MaxTokens   int      `json:"max_tokens"`
		Temperature *float64 `json:"temperature"`
		ExtraBody   struct {
			Google struct {
				ThinkingConfig struct {
					ThinkingBudget int `json:"thinking_budget"`
				} `json:"thinking_config"`
			} `json:"google"`
		} `json:"extra_body"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if r.Path != "/v1/chat/completions" || r.APIKey != "g-key" || r.Header.Get("Authorization") != "Bearer g-key" {
		t.Errorf("request %s with key %q, want Chat Completions with the key as a bearer token", r.Path, r.APIKey)
	}
	if body.Model != "gemini-2.5-flash" || body.MaxTokens != 500 || body.Temperature != nil || body.ExtraBody.Google.ThinkingConfig.ThinkingBudget != 1024 {
		t.Errorf("body = %s, want the model, max_tokens 500, no temperature and thinking_budget 1024", r.Body)
	}
	if geminiBaseURL != "https://generativelanguage.googleapis.com/v1beta/openai/" {
		t.Errorf("geminiBaseURL = %s", geminiBaseURL)
	}
}
