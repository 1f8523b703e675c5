package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/model/modeltest"
)

// These tests run weave as a process against two fake model servers, each
// the endpoint of a named model entry (models:): agents on different
// vendors in one run, a fallback from a model that keeps failing, the
// reasoning settings each vendor takes, and Azure OpenAI's wire.

const (
	deepKey = "deep-key-5e1f0c"
	fastKey = "fast-key-9a7b21"
)

// modelsEnv is the environment of a weave process whose models are all
// entries: no WEAVE_MODEL_*, each entry's key in a variable named so that
// only the entries' api_key_env make it a secret.
func modelsEnv(t *testing.T) []string {
	t.Helper()
	return trustingEnv(t, []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "WEAVE_SANDBOX_MODE=off",
		"DEEP_MODEL_ACCESS=" + deepKey, "FAST_MODEL_ACCESS=" + fastKey,
	})
}

// anthropicBody is the part of an Anthropic request these tests read.
type anthropicBody struct {
	Model       string   `json:"model"`
	MaxTokens   int      `json:"max_tokens"`
	Temperature *float64 `json:"temperature"`
	Thinking    *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			Signature string          `json:"signature"`
			Thinking  string          `json:"thinking"`
		} `json:"content"`
	} `json:"messages"`
}

func decodeAnthropic(t *testing.T, r modeltest.Request) anthropicBody {
	t.Helper()
	var b anthropicBody
	if err := r.Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestModelFallbackThroughTheBinary: Loom's model (an OpenAI-wire entry)
// answers once with a tool call, then keeps answering 429; past its
// retries the call moves to the fallback entry on the Anthropic wire, the
// tool call and its result carried over, and the conversation stays there.
// The switch is a model.fallback event, a line on screen and a line in
// the transcript. The model on the fallback then tries to read the
// entries' keys through bash, and gets neither.
func TestModelFallbackThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi from the file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "call_read_1", Name: "read", Args: `{"path":"hello.txt"}`}}},
		modeltest.Turn{Default: true, Status: 429, RetryAfter: "0", Error: "Rate limit reached for requests"},
	)
	fast := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "bash", Args: `{"command":"env; echo DEEP=$DEEP_MODEL_ACCESS FAST=$FAST_MODEL_ACCESS"}`}}},
		modeltest.Turn{Text: "hello.txt says hi from the file."},
	)
	writeConfig(t, dir, fmt.Sprintf(`models:
  deep:
    provider: openai
    name: deep-model
    base_url: %s
    api_key_env: DEEP_MODEL_ACCESS
  fast:
    provider: anthropic
    name: fast-model
    base_url: %s
    api_key_env: FAST_MODEL_ACCESS
agents:
  loom:
    model: deep
    fallback: [fast]
`, deep.OpenAIURL(), fast.URL))

	start := time.Now()
	code, out, errOut := runWeave(t, bin, dir, modelsEnv(t), "chat", "-p", "what does hello.txt say?", "--json")
	t.Logf("first chat took %s", time.Since(start))
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// deep: the answer with the tool call, then the 429s: the first try
	// and its four retries.
	if n := len(deep.Requests()); n != 6 {
		t.Errorf("deep got %d requests, want 6 (one answer, then a 429 tried 5 times)", n)
	}
	for _, r := range deep.Requests() {
		if r.APIKey != deepKey || r.Model != "deep-model" {
			t.Errorf("deep's request: key %q model %q, want its own key and model", r.APIKey, r.Model)
		}
	}
	freqs := fast.Requests()
	if len(freqs) != 2 {
		t.Fatalf("fast got %d requests, want 2 (the conversation stays on it)", len(freqs))
	}
	for _, r := range freqs {
		if r.Format != "anthropic" || r.APIKey != fastKey || r.Model != "fast-model" {
			t.Errorf("fast's request: %s, key %q, model %q; want the Anthropic wire with its own key and model", r.Format, r.APIKey, r.Model)
		}
	}
	// The conversation crossed the wire formats whole: deep's tool call
	// and its result, as Anthropic blocks.
	first := decodeAnthropic(t, freqs[0])
	var use, result bool
	for _, m := range first.Messages {
		for _, c := range m.Content {
			if m.Role == "assistant" && c.Type == "tool_use" && c.ID == "call_read_1" && c.Name == "read" && strings.Contains(string(c.Input), "hello.txt") {
				use = true
			}
			if m.Role == "user" && c.Type == "tool_result" && c.ToolUseID == "call_read_1" && strings.Contains(string(c.Content), "hi from the file") {
				result = true
			}
		}
	}
	if !use || !result {
		t.Errorf("fast's first request lacks deep's tool call (%v) or its result (%v): %s", use, result, freqs[0].Body)
	}
	// The keys reach no child, whichever entry holds them.
	second := string(freqs[1].Body)
	if !strings.Contains(second, "DEEP= FAST=") || strings.Contains(second, deepKey) || strings.Contains(second, fastKey) {
		t.Errorf("bash's result as the model saw it shows a key or lacks the echo:\n%s", second)
	}

	var fell []chat.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev chat.Event
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == chat.ModelFallback {
			fell = append(fell, ev)
		}
	}
	if len(fell) != 1 || fell[0].Fallback == nil || fell[0].Agent != "loom" ||
		*fell[0].Fallback != (chat.Fallback{From: "deep", To: "fast", Reason: "rate limited (429)"}) || !strings.Contains(fell[0].Error, "429") {
		t.Errorf("model.fallback events = %+v, want one, loom from deep to fast, rate limited", fell)
	}

	// The transcript has the switch, between deep's answer and fast's.
	id := onlySession(t, dir)
	b, err := os.ReadFile(filepath.Join(dir, ".weave", "sessions", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l chat.SessionLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Type == "fallback" {
			if l.Fallback == nil || l.Fallback.From != "deep" || l.Fallback.To != "fast" || l.Agent != "loom" {
				t.Errorf("fallback line = %s", line)
			}
		}
		if l.Type == "usage" || l.Type == "fallback" {
			kinds = append(kinds, l.Type+":"+l.Model)
		}
	}
	if got := strings.Join(kinds, " "); got != "usage:deep-model fallback: usage:fast-model usage:fast-model" {
		t.Errorf("transcript usage and fallback lines = %s, want deep's answer, the switch, then fast's answers", got)
	}
	assertNoKeyUnder(t, filepath.Join(dir, ".weave"))

	// Shown to a person: a line on stderr. A new process starts from the
	// agent's own model again.
	fast.Add(modeltest.Turn{Text: "Still hi."})
	code, _, errOut = runWeave(t, bin, dir, modelsEnv(t), "chat", "--resume", id, "-p", "again?")
	if code != 0 || !strings.Contains(errOut, "[model deep rate limited (429); falling back to fast]") {
		t.Errorf("a second chat: exit %d, stderr %q; want the fallback said on stderr", code, errOut)
	}
	code, out, _ = runWeave(t, bin, dir, modelsEnv(t), "sessions", "show", id)
	if code != 0 || strings.Count(out, "[loom: model deep rate limited (429); falling back to fast]") != 2 {
		t.Errorf("sessions show: exit %d, want both switches shown:\n%s", code, out)
	}
}

// onlySession is the id of the one session the project has.
func onlySession(t *testing.T, dir string) string {
	t.Helper()
	ids, err := chat.Sessions(dir)
	if err != nil || len(ids) != 1 {
		t.Fatalf("sessions = %v, %v; want one", ids, err)
	}
	return ids[0].ID
}

const twoVendorPlan = `# Two vendors

## TODOs

- [ ] 1. Write the greeting
  **What**: Create greeting.txt saying hello.
  **Acceptance**: greeting.txt says hello.
- [ ] 2. Add the dark theme [category: frontend]
  **What**: write web/dark.css with the dark palette.
  **Acceptance**: the file exists.
  ` + "```sh verify\n  test -s web/dark.css\n  ```" + `
`

// TestAgentsOnTwoVendorsInOneRun: a start-work run whose prose task goes
// to Tapestry on an Anthropic entry, with extended thinking, and whose
// category task goes to the category's Shuttle on an OpenAI-wire entry,
// with a reasoning effort: each server sees only its agent, with its own
// key and model, and each setting the way its vendor takes it.
func TestAgentsOnTwoVendorsInOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"two": twoVendorPlan})
	claude := modeltest.NewServer(t,
		modeltest.Turn{Thinking: "The file must say hello.", ToolCalls: []modeltest.ToolCall{{Name: "write", Args: `{"path":"greeting.txt","content":"hello\n"}`}}},
		modeltest.Turn{Thinking: "Now the tick.", ToolCalls: []modeltest.ToolCall{{Name: "plan_check", Args: `{"task":1}`}}},
		modeltest.Turn{Thinking: "Done.", Text: "Task 1 is done."},
	)
	gpt := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, "web/dark.css", ":root { --bg: #111; }\n")}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "plan_check", Args: `{"plan":"two","task":2}`}}},
		modeltest.Turn{Text: "Wrote web/dark.css."},
	)
	writeConfig(t, dir, fmt.Sprintf(`model:
  name: claude
models:
  claude:
    provider: anthropic
    name: claude-test
    base_url: %s
    api_key_env: DEEP_MODEL_ACCESS
    thinking_budget: 2048
  gpt:
    provider: openai
    name: gpt-test
    base_url: %s
    api_key_env: FAST_MODEL_ACCESS
    reasoning_effort: high
agents:
  tapestry:
    model: claude
categories:
  frontend:
    model: gpt
`, claude.URL, gpt.OpenAIURL()))
	code, out, errOut := runWeave(t, bin, dir, modelsEnv(t), "start-work", "two")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	plan := readFile(t, filepath.Join(dir, ".weave", "plans", "two.md"))
	if !strings.Contains(plan, "- [x] 1.") || !strings.Contains(plan, "- [x] 2.") {
		t.Errorf("plan = %s, want both tasks ticked", plan)
	}

	creqs := claude.Requests()
	if len(creqs) != 3 {
		t.Fatalf("the Anthropic entry got %d requests, want Tapestry's 3", len(creqs))
	}
	for i, r := range creqs {
		b := decodeAnthropic(t, r)
		if r.Format != "anthropic" || r.APIKey != deepKey || b.Model != "claude-test" || !strings.Contains(string(r.Body), "You are Tapestry") {
			t.Errorf("anthropic request %d: %s key %q model %q; want Tapestry's, on its entry", i, r.Format, r.APIKey, b.Model)
		}
		if b.Thinking == nil || b.Thinking.Type != "enabled" || b.Thinking.BudgetTokens != 2048 || b.MaxTokens <= 2048 || b.Temperature != nil {
			t.Errorf("anthropic request %d: thinking %+v, max_tokens %d, temperature %v; want thinking enabled with budget 2048 below max_tokens, no temperature",
				i, b.Thinking, b.MaxTokens, b.Temperature)
		}
	}
	// The answer that called a tool goes back with its thinking first,
	// signed as it came.
	second := decodeAnthropic(t, creqs[1])
	var sent bool
	for _, m := range second.Messages {
		if m.Role == "assistant" && len(m.Content) > 1 && m.Content[0].Type == "thinking" && m.Content[0].Thinking == "The file must say hello." &&
			m.Content[0].Signature != "" && m.Content[1].Type == "tool_use" {
			sent = true
		}
	}
	if !sent {
		t.Errorf("Tapestry's second request does not send the first answer's thinking back before its tool call:\n%s", creqs[1].Body)
	}

	greqs := gpt.Requests()
	if len(greqs) != 3 {
		t.Fatalf("the OpenAI entry got %d requests, want the frontend Shuttle's 3", len(greqs))
	}
	for i, r := range greqs {
		var b struct {
			Model           string   `json:"model"`
			ReasoningEffort string   `json:"reasoning_effort"`
			Temperature     *float64 `json:"temperature"`
		}
		if err := r.Decode(&b); err != nil {
			t.Fatal(err)
		}
		if r.Format != "openai" || r.APIKey != fastKey || b.Model != "gpt-test" || !strings.Contains(string(r.Body), "You are Shuttle") {
			t.Errorf("openai request %d: %s key %q model %q; want the frontend Shuttle's, on its entry", i, r.Format, r.APIKey, b.Model)
		}
		if b.ReasoningEffort != "high" || b.Temperature != nil {
			t.Errorf("openai request %d: reasoning_effort %q, temperature %v; want high and none", i, b.ReasoningEffort, b.Temperature)
		}
	}
}

// TestAzureEntryThroughTheBinary: an Azure OpenAI entry speaks as the
// official SDK does: the deployment in the path, the API version in the
// query, the key in api-key and never in Authorization.
func TestAzureEntryThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "Hello from Azure."})
	writeConfig(t, dir, fmt.Sprintf(`models:
  work:
    provider: azure
    name: gpt-4.1
    api_key_env: DEEP_MODEL_ACCESS
    reasoning_effort: low
    azure:
      endpoint: %s
      deployment: gpt41-prod
      api_version: "2024-10-21"
agents:
  loom:
    model: work
`, srv.URL))
	code, out, errOut := runWeave(t, bin, dir, modelsEnv(t), "chat", "-p", "hi")
	if code != 0 || out != "Hello from Azure.\n" {
		t.Fatalf("exit %d, stdout %q\nstderr: %s", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/openai/deployments/gpt41-prod/chat/completions" || r.Query != "api-version=2024-10-21" {
		t.Errorf("request %s?%s, want /openai/deployments/gpt41-prod/chat/completions?api-version=2024-10-21", r.Path, r.Query)
	}
	if r.Header.Get("Api-Key") != deepKey || r.Header.Get("Authorization") != "" {
		t.Errorf("api-key %q, Authorization %q; want the key in api-key alone", r.Header.Get("Api-Key"), r.Header.Get("Authorization"))
	}
	if r.Model != "gpt41-prod" || !strings.Contains(string(r.Body), `"reasoning_effort":"low"`) {
		t.Errorf("body = %s, want the deployment as the model and reasoning_effort low", r.Body)
	}
}

// TestStartWorkFallbackEvent: in a run, Tapestry's fallback is a
// model.fallback run event in --json, and the task still gets done.
func TestStartWorkFallbackEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"greeting": prosePlan})
	deep := modeltest.NewServer(t, modeltest.Turn{Default: true, Status: 503, RetryAfter: "0", Error: "upstream connect error"})
	fast := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "write", Args: `{"path":"greeting.txt","content":"hello\n"}`}}},
		tool("plan_check", `{"task":1}`),
		modeltest.Turn{Text: "Task 1 is done."},
	)
	writeConfig(t, dir, fmt.Sprintf(`models:
  deep: {provider: anthropic, name: deep-model, base_url: %s, api_key_env: DEEP_MODEL_ACCESS}
  fast: {provider: openai, name: fast-model, base_url: %s, api_key_env: FAST_MODEL_ACCESS}
model:
  name: deep
  fallback: [fast]
`, deep.URL, fast.OpenAIURL()))
	code, out, errOut := runWeave(t, bin, dir, modelsEnv(t), "start-work", "greeting", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var fell []struct{ Type, Agent, Reason, Output string }
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Type, Agent, Reason, Output string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		if ev.Type == chat.ModelFallback {
			fell = append(fell, ev)
		}
	}
	if len(fell) != 1 || fell[0].Agent != "tapestry" || fell[0].Reason != "model deep failing (503); falling back to fast" || !strings.Contains(fell[0].Output, "503") {
		t.Errorf("model.fallback run events = %+v, want one for tapestry, from deep to fast", fell)
	}
	if n := len(fast.Requests()); n != 3 {
		t.Errorf("fast got %d requests, want Tapestry's 3 (it stays there)", n)
	}
	if plan := readFile(t, filepath.Join(dir, ".weave", "plans", "greeting.md")); !strings.Contains(plan, "- [x] 1.") {
		t.Errorf("plan = %s, want task 1 ticked", plan)
	}
}
