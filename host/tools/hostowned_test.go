package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weavehq/weave/config"
)

func TestHostOwnedRule(t *testing.T) {
	scripts := []string{".weave/hooks/check.sh"}
	for _, tc := range []struct{ rel, want string }{
		{".weave/config.yaml", "config"},
		{".weave/config.local.yml", "config"},
		{".weave/CONFIG.json", "config"},
		{".weave/state.json", "work state"},
		{".weave/weave.lock", "lock"},
		{".weave/sessions/ses_1.jsonl", "sessions"},
		{".weave/run/123.json", "run records"},
		{".weave/plugins/weave-hook-x", "plugins"},
		{".weave/cache/plans.gob", "cache"},
		{".weave/logs/weave.log", "logs"},
		{".weave/logs/g/001-a.log", "logs"},
		{".claude/settings.json", "Claude settings"},
		{".claude/settings.local.json", "Claude settings"},
		{".mcp.json", "MCP servers"},
		{".weave/commands/review.md", "command files"},
		{".claude/commands/frontend/test.md", "command files"},
		{".Claude/Commands/x.md", "command files"},
		{".claude/skills/x/SKILL.md", ""},
		{".weave/hooks/check.sh", "hook script"},
		{".weave/plans/g.md", ""},
		{".weave/notes.md", ""},
		{".weave/configs/x.md", ""},
		{"config.yaml", ""},
		{"src/state.json", ""},
		{".claude/agents/a.md", ""},
	} {
		if got := hostOwnedRule(tc.rel, scripts); got != tc.want {
			t.Errorf("hostOwnedRule(%q) = %q, want %q", tc.rel, got, tc.want)
		}
	}
}

func TestHookScriptsNamedByTheConfig(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Hooks = map[string][]config.HookMatcher{"PreToolUse": {{Hooks: []config.CommandHook{
		{Command: "./hooks/guard.sh --strict"},
		{Command: `python3 "$CLAUDE_PROJECT_DIR/hooks/check.py"`},
		{Command: "id > pwned.txt"},
		{Command: "/usr/bin/true"},
	}}}}
	got := hookScripts(root, cfg)
	want := []string{"hooks/guard.sh", "hooks/check.py"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("hookScripts = %q, want %q", got, want)
	}
}

func TestOwnedPathThroughALinkedWeaveDir(t *testing.T) {
	root := t.TempDir()
	// .weave is a link to a directory elsewhere in the project: the config
	// weave reads is .weave/config.yaml, whose real name is meta/config.yaml.
	if err := os.MkdirAll(filepath.Join(root, "meta"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("meta", filepath.Join(root, ".weave")); err != nil {
		t.Fatal(err)
	}
	tl := &Tools{root: root, cfg: config.Default()}
	real := filepath.Join(root, "meta", "config.yaml")
	if got := tl.ownedPath(".weave/config.yaml", real); got != "refused: .weave/config.yaml is host-owned (config)" {
		t.Errorf("ownedPath through the link = %q, want the config rule", got)
	}
	if got := tl.ownedPath("meta/notes.md", filepath.Join(root, "meta", "notes.md")); got != "" {
		t.Errorf("ownedPath(meta/notes.md) = %q, want none", got)
	}
}
