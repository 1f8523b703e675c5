package agents

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/plugintest"
)

// TestPatternTemplateValidates writes the template of Pattern's prompt as a
// plan and validates it: the prompt and the validator must agree, with no
// warning.
func TestPatternTemplateValidates(t *testing.T) {
	prompt := role(t, Pattern).Prompt
	start := strings.Index(prompt, "```markdown\n")
	end := strings.Index(prompt, "\n```\n\n**Estimated Effort** is")
	if start < 0 || end < start {
		t.Fatal("no ```markdown template in Pattern's prompt")
	}
	tmpl := prompt[start+len("```markdown\n") : end+1]
	dir := t.TempDir()
	for _, f := range []string{".weave/plans", "path/to"} {
		if err := os.MkdirAll(filepath.Join(dir, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "path/to/file.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".weave/plans/template.md")
	if err := os.WriteFile(path, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plans.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rep := plans.Validate(dir, p)
	// Two tasks in TODOs, the second waiting for the first, and one check
	// in Verification, the final gate.
	if len(rep.Errors)+len(rep.Warnings) > 0 || len(p.Tasks) != 3 {
		t.Errorf("Pattern's template: %d tasks, errors %v, warnings %v; want 3 (two TODOs and a check) and no finding", len(p.Tasks), rep.Errors, rep.Warnings)
	}
	if !p.HasDeps() || len(p.Tasks) < 2 || !slices.Equal(p.Tasks[1].After, []int{1}) {
		t.Errorf("Pattern's template shows no dependency: task 2 waits for %v, want [1]", p.Tasks[min(1, len(p.Tasks)-1)].After)
	}
}

func reply(text string, calls ...plugins.ToolCall) plugins.ChatResponse {
	return plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant, Content: text, ToolCalls: calls}}
}

// TestPatternAgentSendsFindingsBack checks the fix loop in process: the
// validator's findings become the next user message, and the answer names
// the plan once it passes. Only plans the conversation changed are checked.
func TestPatternAgentSendsFindingsBack(t *testing.T) {
	dir := t.TempDir()
	plansDir := filepath.Join(dir, ".weave", "plans")
	if err := os.MkdirAll(plansDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// An old, bad plan nobody touches is not Pattern's to fix.
	if err := os.WriteFile(filepath.Join(plansDir, "old.md"), []byte("no tasks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := "# G\n\n## TL;DR\nx\n\n**Estimated Effort**: Quick\n\n## Context\nc\n\n## Objectives\n- o\n\n## TODOs\n\n- [ ] 1. Do\n  **What**: w\n  **Acceptance**: a\n\n## Verification\n\n- [ ] ok\n"
	h := plugintest.NewFakeHost()
	h.OnToolFunc(plugins.ToolWrite, func(c plugins.ToolCall) (plugins.ToolResult, error) {
		path, _ := c.Args["path"].(string)
		content, _ := c.Args["content"].(string)
		return plugins.ToolResult{Output: "written"}, os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644)
	})
	write := func(content string) plugins.ToolCall {
		return plugins.ToolCall{Tool: plugins.ToolWrite, Args: map[string]any{"path": ".weave/plans/g.md", "content": content}}
	}
	h.QueueReply(reply("", write("# G\n\n- [ ] 1. Do\n")))
	h.QueueReply(reply("Wrote it."))
	h.QueueReply(reply("", write(good)))
	h.QueueReply(reply("Fixed it."))

	a := PatternAgent{Model: NewModelAgent(role(t, Pattern), Overrides{}), Project: dir}
	resp, err := a.Handle(context.Background(), h, plugins.AgentRequest{Prompt: "plan it"})
	if err != nil || resp.Error != "" {
		t.Fatalf("Handle = %+v, %v", resp, err)
	}
	if !strings.HasPrefix(resp.Output, "Fixed it.") || !strings.Contains(resp.Output, ".weave/plans/g.md") || !strings.Contains(resp.Output, "2 tasks") {
		t.Errorf("output = %q, want the model's answer and the validated plan", resp.Output)
	}
	reqs := h.ChatRequests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	msgs := reqs[2].Messages
	last := msgs[len(msgs)-1]
	if last.Role != plugins.RoleUser || !strings.Contains(last.Content, ".weave/plans/g.md") ||
		!strings.Contains(last.Content, "no ## Verification section") || strings.Contains(last.Content, "old.md") {
		t.Errorf("fix message = %+v, want g.md's findings and nothing about old.md", last)
	}
	// The conversation goes on: the first write and its result are there.
	if len(msgs) != 5 || msgs[0].Content != "plan it" {
		t.Errorf("third request has %d messages starting %q, want the whole conversation (5)", len(msgs), msgs[0].Content)
	}
}
