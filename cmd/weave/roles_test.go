package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

func systemPrompt(b modelRequest) string {
	if len(b.Messages) > 0 && b.Messages[0].Role == "system" {
		return b.Messages[0].Content
	}
	return ""
}

func toolNamesOf(b modelRequest) []string {
	var out []string
	for _, tl := range b.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

const frontendPlan = `# Dark mode

## TODOs

- [ ] 1. Add the dark theme [category: frontend]
  **What**: write web/dark.css with the dark palette.
  **Files**: ` + "`web/dark.css`" + ` (new)
  **Acceptance**: the file exists.
  ` + "```sh verify\n  test -s web/dark.css\n  ```" + `
`

// TestRolesThroughTheBinary covers the roles a project configures:
// categories, custom agents, disabled agents and disabled hooks, through
// the built binary and the fake model.
func TestRolesThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("a category task runs on shuttle-frontend with the category's model", func(t *testing.T) {
		dir := project(t, map[string]string{"dark-mode": frontendPlan})
		writeConfig(t, dir, `categories:
  frontend:
    model: frontend-model
    temperature: 0.6
    tools: [read, write, edit, bash, plan_check]
    prompt_append: Use CSS custom properties.
`)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, "web/dark.css", ":root { --bg: #111; }\n")}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "plan_check", Args: `{"plan":"dark-mode","task":1}`}}},
			modeltest.Turn{Text: "Wrote web/dark.css."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "dark-mode")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		plan, _ := os.ReadFile(filepath.Join(dir, ".weave", "plans", "dark-mode.md"))
		if !strings.Contains(string(plan), "- [x] 1. Add the dark theme") {
			t.Errorf("the task is not ticked:\n%s", plan)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d model requests, want 3", len(reqs))
		}
		first := decodeBody(t, reqs[0])
		if reqs[0].Model != "frontend-model" {
			t.Errorf("the task's model = %q, want the category's frontend-model", reqs[0].Model)
		}
		sys := systemPrompt(first)
		if !strings.Contains(sys, "You are Shuttle") || !strings.Contains(sys, "`frontend` category") || !strings.Contains(sys, "Use CSS custom properties.") {
			t.Errorf("system prompt does not make it frontend's Shuttle:\n%s", sys)
		}
		if got := strings.Join(toolNamesOf(first), ","); got != "read,write,edit,bash,plan_check" {
			t.Errorf("tools offered = %s, want the category's narrowing", got)
		}
		user := first.Messages[len(first.Messages)-1].Content
		if !strings.Contains(user, "1") || !strings.Contains(user, "dark-mode") {
			t.Errorf("task prompt = %q, want the task as the plan writes it", user)
		}
	})

	t.Run("loom delegates to a custom agent", func(t *testing.T) {
		dir := project(t, nil)
		if err := os.MkdirAll(filepath.Join(dir, ".weave", "agents"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".weave", "agents", "docs.md"), []byte("You are the docs writer. Write plain English.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		writeConfig(t, dir, `custom_agents:
  docs-writer:
    description: documentation pages need writing or updating
    prompt_file: .weave/agents/docs.md
    tools: [read, write, glob]
    model: docs-model
    temperature: 0.4
categories:
  frontend:
    model: frontend-model
`)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "task", Args: `{"agent":"docs-writer","prompt":"write docs/intro.md"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, "docs/intro.md", "# Intro\n"), {Name: "bash", Args: `{"command":"true"}`}}},
			modeltest.Turn{Text: "Wrote docs/intro.md."},
			modeltest.Turn{Text: "The docs writer wrote docs/intro.md."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "write an intro page")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "docs", "intro.md")); err != nil || string(b) != "# Intro\n" {
			t.Errorf("docs/intro.md = %q, %v", b, err)
		}
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d model requests, want 4", len(reqs))
		}
		loom := systemPrompt(decodeBody(t, reqs[0]))
		for _, want := range []string{"| `docs-writer` | documentation pages need writing or updating |", "| `shuttle-frontend` |", "| `thread` |"} {
			if !strings.Contains(loom, want) {
				t.Errorf("Loom's prompt lacks %q:\n%s", want, loom)
			}
		}
		docs := decodeBody(t, reqs[1])
		if reqs[1].Model != "docs-model" || systemPrompt(docs) != "You are the docs writer. Write plain English.\n" {
			t.Errorf("the custom agent's request: model %q, system %q; want docs-model and the prompt file", reqs[1].Model, systemPrompt(docs))
		}
		if got := strings.Join(toolNamesOf(docs), ","); got != "read,write,glob" {
			t.Errorf("the custom agent was offered %s, want its tools", got)
		}
		// bash is outside its row: refused, and the model is told.
		third := decodeBody(t, reqs[2])
		last := third.Messages[len(third.Messages)-1]
		if last.Role != "tool" || last.Content != "denied by the capability matrix (docs-writer has no bash)" {
			t.Errorf("last message to the custom agent = %+v, want bash refused", last)
		}

		code, out, errOut = runWeave(t, bin, dir, chatEnv(t, srv), "agents", "list", "--json")
		if code != 0 {
			t.Fatalf("agents list: exit %d: %s", code, errOut)
		}
		var list agentsList
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		byName := map[string]agentEntry{}
		for _, e := range list.Agents {
			byName[e.Name] = e
		}
		if e := byName["docs-writer"]; !e.Custom || e.Model != "docs-model" || e.Mode != "subagent" || e.Matrix["write"] != cellAllowed || e.Matrix["bash"] != cellDenied {
			t.Errorf("agents list docs-writer = %+v", e)
		}
		if e := byName["shuttle-frontend"]; e.Category != "frontend" || e.Model != "frontend-model" {
			t.Errorf("agents list shuttle-frontend = %+v", e)
		}
		if !slices.Contains(byName["loom"].Delegates, "docs-writer") || !slices.Contains(byName["loom"].Delegates, "shuttle-frontend") {
			t.Errorf("loom delegates to %v, want the custom agent and the category's Shuttle", byName["loom"].Delegates)
		}
	})

	t.Run("disabled agents are gone from the list and from Loom's prompt", func(t *testing.T) {
		dir := project(t, nil)
		writeConfig(t, dir, "disabled_agents: [warp, thread]\n")
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "task", Args: `{"agent":"thread","prompt":"look"}`}}},
			modeltest.Turn{Text: "I looked myself."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "hi")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model requests, want 2", len(reqs))
		}
		loom := systemPrompt(decodeBody(t, reqs[0]))
		for _, gone := range []string{"`warp`", "Warp", "`thread`", "Thread"} {
			if strings.Contains(loom, gone) {
				t.Errorf("Loom's prompt still names %s:\n%s", gone, loom)
			}
		}
		if !strings.Contains(loom, "`spindle`") {
			t.Errorf("Loom's prompt lost spindle:\n%s", loom)
		}
		second := decodeBody(t, reqs[1])
		if last := second.Messages[len(second.Messages)-1]; last.Role != "tool" || !strings.HasPrefix(last.Content, "denied by the capability matrix (loom may not delegate to thread;") {
			t.Errorf("delegating to a disabled agent: %+v, want a refusal", last)
		}
		r := runBinary(t, bin, cleanEnv(t), "", "--dir", dir, "agents", "list")
		if r.code != 0 || strings.Contains(r.out, "\nwarp ") || strings.Contains(r.out, "\nthread ") || !strings.Contains(r.out, "\nspindle ") {
			t.Errorf("agents list: exit %d\n%s%s", r.code, r.out, r.err)
		}

		writeConfig(t, dir, "disabled_agents: [loom, nobody]\n")
		r = runBinary(t, bin, cleanEnv(t), "", "--dir", dir, "agents", "list")
		if r.code == 0 || !strings.Contains(r.err, "loom cannot be disabled") || !strings.Contains(r.err, `no agent "nobody"`) {
			t.Errorf("agents list with a bad disabled_agents: exit %d\n%s", r.code, r.err)
		}
	})

	t.Run("disabled hooks by short name, and an unknown name is an error", func(t *testing.T) {
		dir := project(t, map[string]string{"ok": okPlan})
		writeConfig(t, dir, "disabled_hooks: [verification-reminder, weave.keyword-detector]\n")
		r := runBinary(t, bin, cleanEnv(t), "", "--dir", dir, "hooks", "list")
		if r.code != 0 || !strings.Contains(r.out, "weave.verification-reminder (disabled)") || !strings.Contains(r.out, "weave.keyword-detector (disabled)") {
			t.Errorf("hooks list: exit %d\n%s%s", r.code, r.out, r.err)
		}

		writeConfig(t, dir, "disabled_hooks: [verification-remindr]\n")
		for _, args := range [][]string{{"hooks", "list"}, {"start-work", "ok"}, {"doctor"}} {
			r = runBinary(t, bin, cleanEnv(t), "", append([]string{"--dir", dir}, args...)...)
			msg := r.out + r.err
			if r.code == 0 || !strings.Contains(msg, `no hook "verification-remindr"`) || !strings.Contains(msg, "verification-reminder,") {
				t.Errorf("%v with an unknown disabled hook: exit %d\n%s%s", args, r.code, r.out, r.err)
			}
		}
	})
}
