package tools

import (
	"context"
	"testing"

	"github.com/weavehq/weave/plugins"
)

// TestNarrowAllowedTools: a command's allowed-tools holds against a model
// that tries to step outside it, in its session and the sessions it
// delegates to, and ends with the turn.
func TestNarrowAllowedTools(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	loom := Caller{Agent: "loom"}
	restore := e.tools.Narrow("s1", "/look", []string{"Read", "Bash(git status:*)", "Edit(src/**)", "grep"})
	call := func(session, tool string, args map[string]any) plugins.ToolResult {
		t.Helper()
		res, err := e.tools.Call(context.Background(), loom, session, plugins.ToolCall{Tool: tool, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, c := range []struct {
		session, tool string
		args          map[string]any
		denied        bool
	}{
		{"s1", "read", map[string]any{"path": "src/main.go"}, false},
		{"s1", "grep", map[string]any{"pattern": "x"}, false},
		{"s1", "bash", map[string]any{"command": "git status --short"}, false},
		{"s1", "bash", map[string]any{"command": "git status; touch x"}, true},
		{"s1", "bash", map[string]any{"command": "git status && touch x"}, true},
		{"s1", "bash", map[string]any{"command": "git status > x"}, true},
		{"s1", "bash", map[string]any{"command": "git statusx"}, true},
		{"s1", "bash", map[string]any{"command": "rm -rf src"}, true},
		{"s1", "edit", map[string]any{"path": "src/main.go", "old_string": "package", "new_string": "package"}, false},
		{"s1", "edit", map[string]any{"path": "README.md", "old_string": "a", "new_string": "b"}, true},
		{"s1", "write", map[string]any{"path": "src/x.go", "content": "x"}, true},
		{"s1.thread-1", "write", map[string]any{"path": "src/x.go", "content": "x"}, true},
		{"s2", "write", map[string]any{"path": "src/y.go", "content": "x"}, false},
	} {
		res := call(c.session, c.tool, c.args)
		if res.Denied != c.denied {
			t.Errorf("%s %s %v: denied = %v (%q), want %v", c.session, c.tool, c.args, res.Denied, res.Output, c.denied)
		}
		if c.denied && res.Output != "denied by the allowed-tools of /look (it does not allow this "+c.tool+" call)" {
			t.Errorf("%s %v: refusal = %q", c.tool, c.args, res.Output)
		}
	}
	restore()
	if res := call("s1", "write", map[string]any{"path": "src/z.go", "content": "x"}); res.Denied {
		t.Errorf("after the turn, write = %q, want allowed", res.Output)
	}
	// It never widens: thread's row has no write, whatever allowed-tools says.
	defer e.tools.Narrow("s3", "/w", []string{"Write"})()
	res, err := e.tools.Call(context.Background(), Caller{Agent: "thread"}, "s3", plugins.ToolCall{Tool: "write", Args: map[string]any{"path": "a.txt", "content": "x"}})
	if err != nil || !res.Denied || res.Output != "denied by the capability matrix (thread has no write)" {
		t.Errorf("thread write under allowed-tools Write = %q, %v; want the matrix's refusal", res.Output, err)
	}
}
