package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

// writeTree writes files (path relative to dir -> content).
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// guidanceEnv is chatEnv with the user config directory xdg.
func guidanceEnv(t *testing.T, srv *modeltest.Server, xdg string) []string {
	t.Helper()
	return append(chatEnv(t, srv), "XDG_CONFIG_HOME="+xdg)
}

// TestInstructionsThroughTheBinary: the project's and the user's
// instruction files are in the first request of every agent; a
// subfolder's arrives when the agent first touches a file under it.
func TestInstructionsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("AGENTS.md and the user's in chat -p's first request", func(t *testing.T) {
		dir := project(t, nil)
		xdg := t.TempDir()
		writeTree(t, dir, map[string]string{"AGENTS.md": "Always run go vet before you answer.\n", "CLAUDE.md": "claude-only text\n"})
		writeTree(t, xdg, map[string]string{"weave/AGENTS.md": "The user prefers short answers.\n"})
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "ok"})
		code, out, errOut := runWeave(t, bin, dir, guidanceEnv(t, srv, xdg), "chat", "-p", "hello")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		sys := systemPrompt(decodeBody(t, srv.Requests()[0]))
		for _, w := range []string{"Always run go vet before you answer.", "The user prefers short answers.", "AGENTS.md (from the project root)"} {
			if !strings.Contains(sys, w) {
				t.Errorf("first request's system prompt lacks %q:\n%s", w, sys)
			}
		}
		if strings.Contains(sys, "claude-only text") {
			t.Error("CLAUDE.md was read beside AGENTS.md; the first found wins")
		}
	})

	t.Run("CLAUDE.md when there is no AGENTS.md", func(t *testing.T) {
		dir := project(t, nil)
		writeTree(t, dir, map[string]string{"CLAUDE.md": "Use tabs in Makefiles.\n"})
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "ok"})
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "hello")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if sys := systemPrompt(decodeBody(t, srv.Requests()[0])); !strings.Contains(sys, "Use tabs in Makefiles.") {
			t.Errorf("system prompt lacks CLAUDE.md:\n%s", sys)
		}
	})

	t.Run("a link out of the project is not read", func(t *testing.T) {
		dir := project(t, nil)
		secret := filepath.Join(t.TempDir(), "notes.md")
		writeTree(t, filepath.Dir(secret), map[string]string{"notes.md": "outside-secret-text\n"})
		if err := os.Symlink(secret, filepath.Join(dir, "AGENTS.md")); err != nil {
			t.Fatal(err)
		}
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "ok"})
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "hello")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if sys := systemPrompt(decodeBody(t, srv.Requests()[0])); strings.Contains(sys, "outside-secret-text") {
			t.Error("AGENTS.md linked out of the project reached the model")
		}
		if !strings.Contains(errOut, "warning: instructions AGENTS.md not read") {
			t.Errorf("stderr = %q, want a warning naming AGENTS.md", errOut)
		}
	})

	t.Run("a large AGENTS.md is cut with a note", func(t *testing.T) {
		dir := project(t, nil)
		writeTree(t, dir, map[string]string{"AGENTS.md": "start " + strings.Repeat("x", 100<<10) + " END-MARK"})
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "ok"})
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "hello")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		sys := systemPrompt(decodeBody(t, srv.Requests()[0]))
		if strings.Contains(sys, "END-MARK") || !strings.Contains(sys, "[cut: AGENTS.md is longer than 64 KiB") {
			t.Errorf("system prompt (%d bytes) is not cut with a note", len(sys))
		}
	})

	t.Run("AGENTS.md in a start-work prose task's first request", func(t *testing.T) {
		dir := project(t, map[string]string{"greeting": prosePlan})
		writeTree(t, dir, map[string]string{"AGENTS.md": "Greetings end with a newline.\n"})
		srv := modeltest.NewServer(t,
			tool("write", `{"path":"greeting.txt","content":"hello\n"}`),
			tool("plan_check", `{"task":1}`),
			modeltest.Turn{Text: "Done."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "greeting")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if sys := systemPrompt(decodeBody(t, srv.Requests()[0])); !strings.Contains(sys, "Greetings end with a newline.") {
			t.Errorf("tapestry's first system prompt lacks AGENTS.md:\n%s", sys)
		}
	})

	t.Run("a nested AGENTS.md after a read or a write under its folder, once", func(t *testing.T) {
		dir := project(t, nil)
		writeTree(t, dir, map[string]string{
			"AGENTS.md":           "root rules\n",
			"svc/AGENTS.md":       "The svc folder uses contexts first.\n",
			"svc/a.go":            "package svc\n",
			"svc/b.go":            "package svc\n",
			"web/CLAUDE.md":       "web-folder-rules\n",
			"untouched/AGENTS.md": "untouched-folder-rules\n",
		})
		srv := modeltest.NewServer(t,
			tool("read", `{"path":"svc/a.go"}`),
			tool("read", `{"path":"svc/b.go"}`),
			tool("write", `{"path":"web/new.css","content":"a{}\n"}`),
			modeltest.Turn{Text: "done"},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "read svc")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d requests, want 4", len(reqs))
		}
		first := decodeChat(t, reqs[0])
		if first.has("system", "contexts first") || !first.has("system", "root rules") {
			t.Error("first request: want the root's AGENTS.md and not svc's, before anything under svc was touched")
		}
		after := decodeChat(t, reqs[1]).lastOf("tool")
		if !strings.Contains(after, "The svc folder uses contexts first.") || !strings.Contains(after, "svc/AGENTS.md") || strings.Contains(after, "root rules") {
			t.Errorf("result of reading svc/a.go = %q, want svc/AGENTS.md added (and the root's not again)", after)
		}
		if second := decodeChat(t, reqs[2]).lastOf("tool"); strings.Contains(second, "contexts first") {
			t.Errorf("svc/AGENTS.md added twice in one session: %q", second)
		}
		if wrote := decodeChat(t, reqs[3]).lastOf("tool"); !strings.Contains(wrote, "web-folder-rules") {
			t.Errorf("result of writing web/new.css = %q, want web/CLAUDE.md added", wrote)
		}
		for _, r := range reqs {
			if decodeChat(t, r).has("tool", "untouched-folder-rules") || decodeChat(t, r).has("system", "untouched-folder-rules") {
				t.Error("untouched/AGENTS.md reached the model though nothing under it was touched")
			}
		}
	})
}

const deploySkill = `---
name: deploy
description: Deploying the service to staging; use when asked to deploy.
---
# Deploying

Run make deploy-staging, then check /healthz. SKILL-BODY-MARK
`

// TestSkillsThroughTheBinary: skills are listed in the first request, load
// through the skill tool (the gate and the hooks see it), a role without
// it is refused, and a category's skills are in its Shuttle from the
// start.
func TestSkillsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("listed, then loaded by the skill tool", func(t *testing.T) {
		dir := project(t, nil)
		xdg := t.TempDir()
		writeTree(t, dir, map[string]string{
			".claude/skills/deploy/SKILL.md": deploySkill,
			".weave/skills/broken/SKILL.md":  "---\nname: [unclosed\ndescription: x\n",
			".weave/skills/nodesc/SKILL.md":  "---\nname: nodesc\n---\nbody\n",
		})
		writeTree(t, xdg, map[string]string{"weave/skills/review/SKILL.md": "---\nname: review\ndescription: Reviewing a diff the team's way.\n---\nREVIEW-BODY\n"})
		srv := modeltest.NewServer(t,
			tool("skill", `{"name":"deploy"}`),
			tool("skill", `{"name":"nope"}`),
			modeltest.Turn{Text: "deployed"},
		)
		code, out, errOut := runWeave(t, bin, dir, guidanceEnv(t, srv, xdg), "chat", "-p", "deploy it")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3", len(reqs))
		}
		first := decodeBody(t, reqs[0])
		sys := systemPrompt(first)
		for _, w := range []string{"- deploy: Deploying the service to staging; use when asked to deploy.", "- review: Reviewing a diff the team's way."} {
			if !strings.Contains(sys, w) {
				t.Errorf("system prompt lacks %q:\n%s", w, sys)
			}
		}
		if strings.Contains(sys, "SKILL-BODY-MARK") || strings.Contains(sys, "nodesc") {
			t.Errorf("system prompt holds a skill's body or a skipped skill:\n%s", sys)
		}
		if tools := strings.Join(toolNamesOf(first), ","); !strings.Contains(tools, "skill") {
			t.Errorf("loom was offered %s, want skill among them", tools)
		}
		if got := decodeChat(t, reqs[1]).lastOf("tool"); !strings.Contains(got, "SKILL-BODY-MARK") || !strings.Contains(got, filepath.Join(".claude", "skills", "deploy")) {
			t.Errorf("skill result = %q, want the body and its folder", got)
		}
		if got := decodeChat(t, reqs[2]).lastOf("tool"); !strings.Contains(got, `no skill named "nope" (have deploy, review)`) {
			t.Errorf("unknown skill result = %q, want the names there are", got)
		}
		for _, w := range []string{"warning: skill .weave/skills/broken/SKILL.md skipped", "warning: skill .weave/skills/nodesc/SKILL.md skipped: its front matter has no description"} {
			if !strings.Contains(errOut, w) {
				t.Errorf("stderr lacks %q:\n%s", w, errOut)
			}
		}
		if !strings.Contains(errOut, "→ skill") {
			t.Errorf("stderr = %q, want the skill call shown as any tool's", errOut)
		}
	})

	t.Run("a role whose row lacks skill is refused", func(t *testing.T) {
		dir := project(t, nil)
		writeTree(t, dir, map[string]string{".weave/skills/deploy/SKILL.md": deploySkill})
		writeConfig(t, dir, "agents:\n  loom:\n    tools: [read, task]\n")
		srv := modeltest.NewServer(t,
			tool("skill", `{"name":"deploy"}`),
			modeltest.Turn{Text: "could not"},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "deploy it")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if sys := systemPrompt(decodeBody(t, reqs[0])); strings.Contains(sys, "- deploy:") {
			t.Error("skills listed to a role that cannot load them")
		}
		got := decodeChat(t, reqs[1]).lastOf("tool")
		if got != "denied by the capability matrix (loom has no skill)" && !strings.HasPrefix(got, "denied by the capability matrix (loom") {
			t.Errorf("skill call by loom without it = %q, want the matrix's refusal", got)
		}
		if strings.Contains(got, "SKILL-BODY-MARK") {
			t.Error("the skill's body reached a role without the skill tool")
		}
	})

	t.Run("a category's skills are preloaded into its Shuttle", func(t *testing.T) {
		dir := project(t, map[string]string{"dark-mode": frontendPlan})
		writeTree(t, dir, map[string]string{
			".weave/skills/css-rules/SKILL.md": "---\nname: css-rules\ndescription: The project's CSS conventions.\n---\nUse custom properties. CSS-RULES-BODY\n",
		})
		writeConfig(t, dir, "categories:\n  frontend:\n    skills: [css-rules]\n")
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, "web/dark.css", ":root { --bg: #111; }\n")}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "plan_check", Args: `{"plan":"dark-mode","task":1}`}}},
			modeltest.Turn{Text: "Wrote web/dark.css."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "dark-mode")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		sys := systemPrompt(decodeBody(t, srv.Requests()[0]))
		if !strings.Contains(sys, "You are Shuttle") || !strings.Contains(sys, "CSS-RULES-BODY") || !strings.Contains(sys, "Skill loaded for the frontend category") {
			t.Errorf("shuttle-frontend's first system prompt lacks the category's skill:\n%s", sys)
		}
	})
}
