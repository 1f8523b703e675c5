// Package shell holds a Claude Code compatible command hook, block-secrets.sh,
// and a sample config that registers it. The test runs the script through
// Weave's hook pipeline, registered by that very config.
package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// pipeline sets up a project as config.yaml tells a user to (the script in
// .weave/hooks/, the snippet as .weave/config.yaml) and returns the hook
// pipeline Weave builds from it.
func pipeline(t *testing.T) (*hooks.Pipeline, string) {
	t.Helper()
	project := t.TempDir()
	copyFile(t, "block-secrets.sh", filepath.Join(project, ".weave", "hooks", "block-secrets.sh"))
	copyFile(t, "config.yaml", filepath.Join(project, ".weave", "config.yaml"))

	cfg, _, err := config.Load(config.Options{ProjectDir: project, UserConfigDir: t.TempDir()})
	if err != nil {
		t.Fatalf("config.yaml does not load: %v", err)
	}
	claude := hooks.ClaudeHooks{}
	for event, matchers := range cfg.Hooks {
		for _, m := range matchers {
			g := hooks.ClaudeMatcherGroup{Matcher: m.Matcher}
			for _, h := range m.Hooks {
				g.Hooks = append(g.Hooks, hooks.ClaudeHookEntry{Type: h.Type, Command: h.Command, Timeout: float64(h.Timeout)})
			}
			claude[event] = append(claude[event], g)
		}
	}
	specs, err := claude.Specs()
	if err != nil {
		t.Fatal(err)
	}
	regs, err := hooks.CommandHooks(specs, hooks.CommandOptions{ProjectDir: project})
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != 1 {
		t.Fatalf("config.yaml registers %d hooks, want 1", len(regs))
	}
	p, err := hooks.NewPipeline(regs, hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p, project
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestBlockSecrets(t *testing.T) {
	p, project := pipeline(t)
	tool := func(name, path string) plugins.Event {
		args := map[string]any{"path": path}
		switch name {
		case plugins.ToolWrite:
			args["content"] = "SECRET=1\n"
		case plugins.ToolEdit:
			args["old_string"], args["new_string"] = "a", "b"
		}
		return plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: name, Args: args, Cwd: project, SessionID: "s1"}
	}
	tests := []struct {
		name    string
		ev      plugins.Event
		blocked bool
	}{
		{"write .env", tool(plugins.ToolWrite, ".env"), true},
		{"write .env.local", tool(plugins.ToolWrite, "config/.env.local"), true},
		{"edit a pem", tool(plugins.ToolEdit, "certs/server.pem"), true},
		{"write a key", tool(plugins.ToolWrite, "tls/server.key"), true},
		{"write id_rsa", tool(plugins.ToolWrite, "/home/u/.ssh/id_rsa"), true},
		{"write id_ed25519", tool(plugins.ToolWrite, "keys/id_ed25519"), true},
		{"write .netrc", tool(plugins.ToolWrite, ".netrc"), true},
		{"write .env.example", tool(plugins.ToolWrite, ".env.example"), false},
		{"write a public key", tool(plugins.ToolWrite, "keys/id_rsa.pub"), false},
		{"write code", tool(plugins.ToolWrite, "main.go"), false},
		{"edit a file that mentions .env", tool(plugins.ToolEdit, "docs/env.md"), false},
		// The matcher is Write|Edit: reading a secret is not this hook's business.
		{"read .env", tool(plugins.ToolRead, ".env"), false},
		{"bash", plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolBash, Args: map[string]any{"command": "cat .env"}, Cwd: project}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := p.Run(context.Background(), tc.ev)
			if err != nil {
				t.Fatalf("Run(%s %v): %v", tc.ev.Tool, tc.ev.Args, err)
			}
			for _, r := range out.Reports {
				if r.Error != "" {
					t.Fatalf("the hook failed instead of deciding: %s", r.Error)
				}
			}
			if out.Blocked() != tc.blocked {
				t.Fatalf("Run(%s %v) blocked = %v (%s), want %v", tc.ev.Tool, tc.ev.Args, out.Blocked(), out.Reason, tc.blocked)
			}
			if tc.blocked {
				path, _ := tc.ev.Args["path"].(string)
				if !strings.Contains(out.Reason, "looks like a file that holds secrets") || !strings.Contains(out.Reason, filepath.Base(path)) {
					t.Errorf("Run(%s) reason = %q, want the script's stderr naming the file", path, out.Reason)
				}
			}
		})
	}
}

// TestClaudeInputPrettyPrinted feeds the script a pretty-printed sample, as a
// user testing it by hand would, with a decoy file_path inside the content.
func TestClaudeInputPrettyPrinted(t *testing.T) {
	p, _ := pipeline(t)
	ev, err := hooks.ParseEvent([]byte(`{
  "hook_event_name": "PreToolUse",
  "session_id": "s1",
  "tool_name": "Write",
  "tool_input": {
    "content": "{\"file_path\": \".env\"}",
    "file_path": "/work/app/notes.txt"
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if out.Blocked() {
		t.Errorf("Run(notes.txt with a decoy in its content) blocked: %s", out.Reason)
	}
}
