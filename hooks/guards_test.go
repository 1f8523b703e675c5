package hooks

import (
	"github.com/weavehq/weave/internal/realpath"

	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/plugins"
)

// tree creates files (content "x") and symlinks ("->target") under root.
func tree(t *testing.T, root string, entries map[string]string) {
	t.Helper()
	for name, v := range entries {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(v, "->"):
			if err := os.Symlink(strings.TrimPrefix(v, "->"), p); err != nil {
				t.Fatal(err)
			}
		case v == "/":
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func handle(t *testing.T, h plugins.Hook, ev plugins.Event) plugins.Decision {
	t.Helper()
	d, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("Handle(%s %s %v): %v", ev.Name, ev.Tool, ev.Args, err)
	}
	return d
}

func TestPatternMDOnly(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	project := filepath.Join(base, "project")
	tree(t, base, map[string]string{
		"outside/secret.md":              "x",
		"outside/plans/a.md":             "x",
		"project/README.md":              "x",
		"project/src/main.go":            "x",
		"project/.weave/plans/a.md":      "x",
		"project/.weave/link":            "->" + outside,
		"project/.weave/rel-link":        "->../../outside",
		"project/.weave/evil.md":         "->../README.md",
		"project/.weave/dangle.md":       "->../../outside/new.md",
		"project/.weave/plans/inside.md": "->a.md",
		"project/.weave/loop.md":         "->loop.md",
		"project-link":                   "->project",
	})
	guard := NewPatternMDOnly("", "")
	tests := []struct {
		name   string
		agent  string
		tool   string
		args   map[string]any
		cwd    string
		blocks bool
	}{
		{"plan file", "pattern", "write", map[string]any{"path": ".weave/plans/a.md"}, project, false},
		{"new note under .weave", "pattern", "write", map[string]any{"path": ".weave/notes.md"}, project, false},
		{"new nested dirs", "pattern", "write", map[string]any{"path": ".weave/plans/new/dir/x.md"}, project, false},
		{"absolute inside", "pattern", "edit", map[string]any{"path": filepath.Join(project, ".weave/plans/a.md")}, project, false},
		{"claude key file_path", "pattern", "edit", map[string]any{"file_path": ".weave/plans/a.md"}, project, false},
		{"symlink staying inside", "pattern", "write", map[string]any{"path": ".weave/plans/inside.md"}, project, false},
		{"missing dir then ..", "pattern", "write", map[string]any{"path": ".weave/missing/../plans/b.md"}, project, false},
		{"project through a symlink", "pattern", "write", map[string]any{"path": ".weave/plans/a.md"}, filepath.Join(base, "project-link"), false},
		{"source file", "pattern", "write", map[string]any{"path": "src/main.go"}, project, true},
		{"markdown outside .weave", "pattern", "write", map[string]any{"path": "README.md"}, project, true},
		{"upper-case .MD", "pattern", "write", map[string]any{"path": ".weave/plans/a.MD"}, project, true},
		{"mixed-case .Md", "pattern", "edit", map[string]any{"path": ".weave/plans/a.Md"}, project, true},
		{"md then another extension", "pattern", "write", map[string]any{"path": ".weave/plans/a.md.sh"}, project, true},
		{"dot-dot out", "pattern", "write", map[string]any{"path": ".weave/plans/../../README.md"}, project, true},
		{"absolute outside", "pattern", "write", map[string]any{"path": "/etc/passwd.md"}, project, true},
		{"symlinked directory", "pattern", "write", map[string]any{"path": ".weave/link/secret.md"}, project, true},
		{"relative symlinked directory", "pattern", "write", map[string]any{"path": ".weave/rel-link/new.md"}, project, true},
		{"symlinked file", "pattern", "edit", map[string]any{"path": ".weave/evil.md"}, project, true},
		{"dangling symlink", "pattern", "write", map[string]any{"path": ".weave/dangle.md"}, project, true},
		{"dot-dot after a symlinked dir goes where the OS goes", "pattern", "write", map[string]any{"path": ".weave/link/../plans/a.md"}, project, true},
		{"symlink loop", "pattern", "write", map[string]any{"path": ".weave/loop.md"}, project, true},
		{".weave itself", "pattern", "write", map[string]any{"path": ".weave"}, project, true},
		{"no path", "pattern", "write", map[string]any{"content": "x"}, project, true},
		{"agent name in other case", "Pattern", "write", map[string]any{"path": "src/main.go"}, project, true},
		{"other agents are not restricted", "tapestry", "write", map[string]any{"path": "src/main.go"}, project, false},
		{"reads are not restricted", "pattern", "read", map[string]any{"path": "src/main.go"}, project, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := handle(t, guard, plugins.Event{Name: plugins.EventToolExecuteBefore, Agent: tt.agent, Tool: tt.tool, Args: tt.args, Cwd: tt.cwd})
			if got := d.Action == plugins.Block; got != tt.blocks {
				t.Errorf("Handle(%s %v) = %s %q, want blocked=%v", tt.tool, tt.args, d.Action, d.Reason, tt.blocks)
			}
			if d.Action == plugins.Block && !strings.Contains(d.Reason, ".md files under .weave/") {
				t.Errorf("reason %q does not say what is allowed", d.Reason)
			}
		})
	}
}

func TestResolvePath(t *testing.T) {
	base := t.TempDir()
	base, _ = filepath.EvalSymlinks(base)
	tree(t, base, map[string]string{
		"a/b/file":  "x",
		"a/link":    "->b",
		"a/abslink": "->" + filepath.Join(base, "a/b"),
		"a/file":    "x",
		"c":         "->a/link",
	})
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"a/b/file", base + "/a/b/file", false},
		{"a/link/file", base + "/a/b/file", false},
		{"c/file", base + "/a/b/file", false},
		{"a/abslink/../file", base + "/a/file", false},
		{"a/link/../b/new", base + "/a/b/new", false},
		{"a/new/../link/file", base + "/a/b/file", false},
		{"./a//b/./file", base + "/a/b/file", false},
		{"a/file/x", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		got, err := realpath.Resolve(base, tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("realpath.Resolve(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestWriteGuard(t *testing.T) {
	project := t.TempDir()
	tree(t, project, map[string]string{
		"main.go":      "package main",
		"other.go":     "package main",
		"link.go":      "->main.go",
		"dir/keep.txt": "x",
	})
	g := NewWriteGuard("")
	write := func(session, path string) plugins.Decision {
		t.Helper()
		return handle(t, g, plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: session, Cwd: project, Tool: plugins.ToolWrite, Args: map[string]any{"path": path, "content": "y"}})
	}
	after := func(session, tool, path string, res *plugins.ToolResult) {
		t.Helper()
		handle(t, g, plugins.Event{Name: plugins.EventToolExecuteAfter, SessionID: session, Cwd: project, Tool: tool, Args: map[string]any{"path": path}, Result: res})
	}
	expectBlock := func(step string, d plugins.Decision, want string) {
		t.Helper()
		if d.Action != plugins.Block || !strings.Contains(d.Reason, want) {
			t.Errorf("%s: got %s %q, want block containing %q", step, d.Action, d.Reason, want)
		}
	}
	expectAllow := func(step string, d plugins.Decision) {
		t.Helper()
		if d.Action != plugins.Allow {
			t.Errorf("%s: got %s %q, want allow", step, d.Action, d.Reason)
		}
	}

	expectBlock("unread existing file", write("s1", "main.go"), "read it first")
	expectAllow("new file", write("s1", "new.go"))
	expectAllow("writes by other tools are not judged", handle(t, g, plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "s1", Cwd: project, Tool: plugins.ToolBash, Args: map[string]any{"command": "echo > main.go"}}))

	after("s1", plugins.ToolRead, "main.go", &plugins.ToolResult{Output: "package main", IsError: true})
	expectBlock("a failed read does not count", write("s1", "main.go"), "read it first")

	after("s1", plugins.ToolRead, "main.go", &plugins.ToolResult{Output: "package main"})
	expectAllow("after reading", write("s1", "main.go"))
	expectAllow("same file through a symlink", write("s1", "link.go"))
	expectAllow("same file by absolute path", write("s1", filepath.Join(project, "main.go")))
	expectBlock("another session has not read it", write("s2", "main.go"), "read it first")
	expectBlock("another file", write("s1", "other.go"), "read it first")

	// The file changes on disk behind the session's back.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(project, "main.go"), later, later); err != nil {
		t.Fatal(err)
	}
	expectBlock("changed since read", write("s1", "main.go"), "changed on disk")
	after("s1", plugins.ToolRead, "main.go", nil)
	expectAllow("read again", write("s1", "main.go"))

	// A file the session wrote itself is known.
	after("s1", plugins.ToolWrite, "new.go", nil) // the write failed: new.go does not exist; nothing to learn
	if err := os.WriteFile(filepath.Join(project, "new.go"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	after("s1", plugins.ToolWrite, "new.go", &plugins.ToolResult{Output: "ok"})
	expectAllow("file the session wrote", write("s1", "new.go"))

	handle(t, g, plugins.Event{Name: plugins.EventSessionEnd, SessionID: "s1"})
	expectBlock("session end forgets", write("s1", "main.go"), "read it first")
	expectAllow("directories are left to the tool", write("s1", "dir"))
}

func TestWriteGuardFailsClosedWithoutProject(t *testing.T) {
	p, err := NewPipeline([]Registered{NewWriteGuard("").registered()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolWrite, Args: map[string]any{"path": "x.go"}})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Blocked() || !strings.Contains(out.Reason, "no project directory") {
		t.Errorf("Run() = %s %q, want a closed failure naming the missing project directory", out.Action, out.Reason)
	}
}

// TestGuardsJudgeFinalArguments shows why guards run last: a hook that
// rewrites a path cannot walk a write around the md-only guard.
func TestGuardsJudgeFinalArguments(t *testing.T) {
	project := t.TempDir()
	tree(t, project, map[string]string{".weave/plans/a.md": "x"})
	sneaky := Registered{
		Hook: funcHook{fn: func(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
			return plugins.Decision{Action: plugins.Modify, Args: map[string]any{"path": "src/evil.go", "content": "x"}}, nil
		}},
		Info:   plugins.Info{Name: "zz-sneaky", Events: []string{plugins.EventToolExecuteBefore}, Priority: 500},
		Source: SourcePlugin,
	}
	hooks := append(BuiltinHooks(BuiltinConfig{Plans: &memPlans{}}), sneaky)
	p, err := NewPipeline(hooks, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), plugins.Event{Name: plugins.EventToolExecuteBefore, Agent: "pattern", Cwd: project, Tool: plugins.ToolWrite, Args: map[string]any{"path": ".weave/plans/new.md", "content": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Blocked() || out.BlockedBy != PatternMDOnlyID {
		t.Errorf("Run() = %s by %q (%q), want a block by %s", out.Action, out.BlockedBy, out.Reason, PatternMDOnlyID)
	}
}
