package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

const reviewFileCommand = `---
description: Review a pull request
argument-hint: [pr-number] [priority]
---
Review PR #$1 with priority $2. All of it: $ARGUMENTS
`

// TestCommandFilesThroughTheBinary: command files run with their
// arguments in chat -p, namespaced as Claude Code does, narrowed by
// allowed-tools (a hostile model cannot step outside), with their model;
// a file never shadows a built-in.
func TestCommandFilesThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("arguments put in, chat -p", func(t *testing.T) {
		dir := project(t, nil)
		writeTree(t, dir, map[string]string{
			".claude/commands/review.md":       reviewFileCommand,
			".weave/commands/frontend/test.md": "Test the frontend: $ARGUMENTS\n",
			".weave/commands/help.md":          "not the built-in\n",
			".weave/commands/bad.md":           "---\ndescription: [unclosed\n",
		})
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "reviewed"}, modeltest.Turn{Text: "tested"}, modeltest.Turn{Text: "tested"})
		env := chatEnv(t, srv)
		code, out, errOut := runWeave(t, bin, dir, env, "chat", "-p", `/review 42 "very high"`)
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if got := decodeChat(t, srv.Requests()[0]).lastOf("user"); got != `Review PR #42 with priority very high. All of it: 42 "very high"` {
			t.Errorf("prompt sent = %q", got)
		}
		for _, w := range []string{"warning: command .weave/commands/help.md not used: /help is a built-in command", "warning: command .weave/commands/bad.md skipped"} {
			if !strings.Contains(errOut, w) {
				t.Errorf("stderr lacks %q:\n%s", w, errOut)
			}
		}
		for i, p := range []string{"/frontend:test the button", "/test the button"} {
			code, out, errOut = runWeave(t, bin, dir, env, "chat", "-p", p)
			if code != 0 {
				t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", p, code, out, errOut)
			}
			if got := decodeChat(t, srv.Requests()[1+i]).lastOf("user"); got != "Test the frontend: the button" {
				t.Errorf("%s sent %q", p, got)
			}
		}
	})

	t.Run("allowed-tools narrows the turn, model picks the model", func(t *testing.T) {
		dir := project(t, nil)
		writeTree(t, dir, map[string]string{
			".weave/commands/changes.md": "---\ndescription: Show the status\nallowed-tools: Read, Bash(git status:*)\nmodel: command-model\n---\nSay what changed.\n",
			"notes.txt":                  "some notes\n",
		})
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{
				{Name: "read", Args: `{"path":"notes.txt"}`},
				{Name: "write", Args: `{"path":"pwned.txt","content":"x"}`},
				{Name: "bash", Args: `{"command":"git status; touch pwned2.txt"}`},
				{Name: "task", Args: `{"agent":"thread","prompt":"write pwned3.txt"}`},
			}},
			modeltest.Turn{Text: "done"},
		)
		env := chatEnv(t, srv)
		code, out, errOut := runWeave(t, bin, dir, env, "chat", "-p", "/changes")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if reqs[0].Model != "command-model" {
			t.Errorf("model = %q, want the command's command-model", reqs[0].Model)
		}
		body := decodeChat(t, reqs[1])
		var results []string
		for _, m := range body.Messages {
			if m.Role == "tool" {
				results = append(results, text(m.Content))
			}
		}
		if len(results) != 4 || !strings.Contains(results[0], "some notes") ||
			results[1] != "denied by the allowed-tools of /changes (it does not allow this write call)" ||
			results[2] != "denied by the allowed-tools of /changes (it does not allow this bash call)" ||
			results[3] != "denied by the allowed-tools of /changes (it does not allow this task call)" {
			t.Errorf("results = %q, want the read and three refusals naming /changes", results)
		}
		for _, f := range []string{"pwned.txt", "pwned2.txt", "pwned3.txt"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				t.Errorf("%s was written outside the command's allowed-tools", f)
			}
		}
	})

	t.Run("a model cannot write a command file", func(t *testing.T) {
		dir := project(t, nil)
		srv := modeltest.NewServer(t,
			tool("write", `{"path":".claude/commands/evil.md","content":"---\nallowed-tools: Bash\n---\nrm -rf /\n"}`),
			tool("write", `{"path":".weave/commands/x/evil.md","content":"x"}`),
			modeltest.Turn{Text: "could not"},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "leave a command")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if got := decodeChat(t, reqs[1]).lastOf("tool"); got != "refused: .claude/commands/evil.md is host-owned (command files)" {
			t.Errorf("write .claude/commands/evil.md = %q, want refused", got)
		}
		if got := decodeChat(t, reqs[2]).lastOf("tool"); !strings.Contains(got, "host-owned (command files)") {
			t.Errorf("write .weave/commands/x/evil.md = %q, want refused", got)
		}
		for _, p := range []string{".claude/commands/evil.md", ".weave/commands/x/evil.md"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s was written", p)
			}
		}
	})

	t.Run("in the interactive chat, listed by /help", func(t *testing.T) {
		dir := project(t, nil)
		writeTree(t, dir, map[string]string{
			".claude/commands/review.md": reviewFileCommand,
			".weave/commands/look.md":    "---\ndescription: Look only\nallowed-tools: Read\nmodel: look-model\n---\nLook at $1.\n",
		})
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "Reviewed it."},
			tool("write", `{"path":"pwned.txt","content":"x"}`), modeltest.Turn{Text: "Looked."},
			tool("write", `{"path":"ok.txt","content":"x"}`), modeltest.Turn{Text: "Wrote it."})
		c := startChat(t, bin, dir, chatEnv(t, srv))
		c.err.waitFor(t, "the first prompt", chatPrompt, 1)
		c.say(t, "/help")
		c.out.waitFor(t, "the help", "/review [pr-number] [priority]  Review a pull request (project)", 1)
		c.err.waitFor(t, "the prompt after it", chatPrompt, 2)
		c.say(t, "/review 7 low")
		c.out.waitFor(t, "the answer", "Reviewed it.\n", 1)
		c.err.waitFor(t, "the prompt after it", chatPrompt, 3)
		c.say(t, "/look README")
		c.out.waitFor(t, "the answer", "Looked.\n", 1)
		c.err.waitFor(t, "the prompt after it", chatPrompt, 4)
		// The next turn is the agent's own again: its model, its row.
		c.say(t, "write ok.txt")
		c.out.waitFor(t, "the answer", "Wrote it.\n", 1)
		c.err.waitFor(t, "the prompt after it", chatPrompt, 5)
		if _, err := c.tty.Write([]byte{4}); err != nil {
			t.Fatal(err)
		}
		if code := c.wait(t); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, c.err.String())
		}
		reqs := srv.Requests()
		if got := decodeChat(t, reqs[0]).lastOf("user"); got != "Review PR #7 with priority low. All of it: 7 low" {
			t.Errorf("prompt sent = %q", got)
		}
		if reqs[1].Model != "look-model" || reqs[3].Model != "fake-model" {
			t.Errorf("models = %q, %q; want look-model for /look, fake-model after it", reqs[1].Model, reqs[3].Model)
		}
		if got := decodeChat(t, reqs[2]).lastOf("tool"); got != "denied by the allowed-tools of /look (it does not allow this write call)" {
			t.Errorf("write under /look = %q, want refused", got)
		}
		if _, err := os.Stat(filepath.Join(dir, "pwned.txt")); err == nil {
			t.Error("pwned.txt written under /look's allowed-tools: Read")
		}
		if _, err := os.Stat(filepath.Join(dir, "ok.txt")); err != nil {
			t.Errorf("the turn after /look is still narrowed: %v", err)
		}
	})
}
