package config

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestModelEntries(t *testing.T) {
	e := newEnv(t)
	write(t, e.userFile("config.yaml"), `models:
  deep: {provider: openai, name: old}
  fast: {provider: openai, name: gpt-4.1-mini, api_key_env: FAST_CRED}
`)
	write(t, e.projectFile("config.yaml"), `models:
  deep:
    provider: anthropic
    name: claude-sonnet-4-5
    thinking_budget: 2048
    api_key_env: DEEP_CRED
    timeout: 90s
  work:
    provider: azure
    name: gpt-4.1
    azure: {endpoint: "https://acme.openai.azure.com", deployment: gpt41}
model:
  fallback: [fast]
agents:
  loom: {model: deep, fallback: [fast, work]}
  thread: {fallback: []}
categories:
  frontend: {model: fast, fallback: [deep]}
`)
	c, src := mustLoad(t, e.opts())
	want := map[string]ModelConfig{
		// The project's entry replaces the user's whole: no field of
		// the openai entry is left in the anthropic one.
		"deep": {Provider: "anthropic", Name: "claude-sonnet-4-5", ThinkingBudget: 2048, APIKeyEnv: "DEEP_CRED", Timeout: 90 * time.Second,
			Azure: AzureConfig{APIVersion: "2024-10-21"}},
		"fast": {Provider: "openai", Name: "gpt-4.1-mini", APIKeyEnv: "FAST_CRED", Timeout: 5 * time.Minute, Azure: AzureConfig{APIVersion: "2024-10-21"}},
		"work": {Provider: "azure", Name: "gpt-4.1", Timeout: 5 * time.Minute,
			Azure: AzureConfig{Endpoint: "https://acme.openai.azure.com", APIVersion: "2024-10-21", Deployment: "gpt41"}},
	}
	if diff := cmp.Diff(want, c.Models); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	if got := c.Agents["loom"].Fallback; !cmp.Equal(got, []string{"fast", "work"}) {
		t.Errorf("agents.loom.fallback = %v", got)
	}
	if got := c.Agents["thread"].Fallback; got == nil || len(got) != 0 {
		t.Errorf("agents.thread.fallback = %#v, want an empty list that replaces model.fallback", got)
	}
	if got := c.Categories["frontend"].Fallback; !cmp.Equal(got, []string{"deep"}) {
		t.Errorf("categories.frontend.fallback = %v", got)
	}
	if got := c.Model.Fallback; !cmp.Equal(got, []string{"fast"}) {
		t.Errorf("model.fallback = %v", got)
	}
	if l, _ := src.Of("models.deep.thinking_budget"); l != LayerProject {
		t.Errorf("models.deep.thinking_budget came from %s, want the project", l)
	}
	// No child gets an entry's key.
	creds := c.CredentialEnv()
	for _, name := range []string{"DEEP_CRED", "FAST_CRED"} {
		if !strings.Contains(strings.Join(creds, ","), name) {
			t.Errorf("CredentialEnv() = %v, want %s withheld", creds, name)
		}
	}
	var b bytes.Buffer
	if err := Render(&b, c, src, false); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"models:\n", "  deep:\n    provider: anthropic\n", "thinking_budget: 2048", "deployment: gpt41", "fallback: [fast, work]"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("Render lacks %q:\n%s", w, b.String())
		}
	}
}

func TestBadModelEntries(t *testing.T) {
	tests := []struct {
		name, yaml, key string
		want            []string
	}{
		{"unknown provider", "models: {x: {provider: bedrock, name: m}}", "models.x.provider", []string{`"bedrock" is not one of none, openai, anthropic, azure, gemini`}},
		{"no provider", "models: {x: {name: m}}", "models.x.provider", []string{"missing; want one of openai, anthropic, azure, gemini"}},
		{"no name", "models: {x: {provider: openai}}", "models.x.name", []string{"missing", "gpt-4.1"}},
		{"unknown field", "models: {x: {provider: openai, name: m, temprature: 1}}", "models.x.temprature", []string{"unknown key"}},
		{"unknown azure field", "models: {x: {provider: azure, name: m, azure: {endpont: x}}}", "models.x.azure.endpont", []string{"unknown key"}},
		{"bad url", "models: {x: {provider: openai, name: m, base_url: 'not a url'}}", "models.x.base_url", []string{"is not a URL"}},
		{"effort on anthropic", "models: {x: {provider: anthropic, name: m, reasoning_effort: high}}", "models.x.reasoning_effort", []string{"set thinking_budget instead"}},
		{"budget on openai", "models: {x: {provider: openai, name: m, thinking_budget: 2048}}", "models.x.thinking_budget", []string{"set reasoning_effort instead"}},
		{"effort and budget", "models: {x: {provider: gemini, name: m, reasoning_effort: low, thinking_budget: 2048}}", "models.x.thinking_budget", []string{"not both"}},
		{"budget too small", "models: {x: {provider: anthropic, name: m, thinking_budget: 100}}", "models.x.thinking_budget", []string{"1024"}},
		{"max_tokens under budget", "models: {x: {provider: anthropic, name: m, thinking_budget: 4096, max_tokens: 4000}}", "models.x.max_tokens", []string{"above thinking_budget"}},
		{"bad effort", "model: {provider: openai, name: m, reasoning_effort: extreme}", "model.reasoning_effort", []string{`"extreme" is not one of none, minimal`}},
		{"azure without endpoint", "models: {x: {provider: azure, name: m}}", "models.x.azure.endpoint", []string{"missing"}},
		{"fallback to no entry", "models: {fast: {provider: openai, name: m}}\nagents: {loom: {fallback: [fsat]}}", "agents.loom.fallback", []string{`"fsat" is not an entry of models (have: fast)`, `did you mean "fast"`}},
		{"global fallback to no entry", "model: {fallback: [deep]}", "model.fallback", []string{`"deep" is not an entry of models`}},
		{"bad entry name", "models: {'a b': {provider: openai, name: m}}", "models.a b", []string{"an entry's name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			path := e.projectFile("config.yaml")
			write(t, path, tt.yaml+"\n")
			_, _, err := Load(e.opts())
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want an error", tt.yaml)
			}
			msg := err.Error()
			if prefix := path + ": " + tt.key + ": "; !strings.Contains(msg, prefix) {
				t.Errorf("Load(%s) error = %q, want it to contain %q", tt.yaml, msg, prefix)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Load(%s) error = %q, want it to contain %q", tt.yaml, msg, w)
				}
			}
		})
	}
}
