package tools

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/plugins"
)

// specMatrix is the capability matrix of the spec (agent-interactions.md),
// with Warp in the read-only group and the two tools the spec does not list
// (todowrite, plan_check, skill) as decided in agents/roles.go. Columns:
//
//	read write edit bash glob grep webfetch task todowrite plan_check skill
//
// v: allowed; x: denied; m: only .md files under .weave/; d: in the row, but
// the role has nobody to delegate to.
var specMatrix = map[string]string{
	"loom":     "v v v v v v v v v v v",
	"tapestry": "v v v v v v v x v v v",
	"pattern":  "v m m v v v v x v x v",
	"thread":   "v x x v v v v x x x v",
	"spindle":  "v x x v v v v x x x v",
	"weft":     "v x x v v v v x x x v",
	"warp":     "v x x v v v v x x x v",
	"shuttle":  "v v v v v v v d v v v",
}

// cellArgs are arguments that make a call of tool acceptable when the tool
// is allowed at all.
func cellArgs(tool string) map[string]any {
	switch tool {
	case plugins.ToolWrite, plugins.ToolEdit:
		return map[string]any{"path": "src/main.go", "content": "x", "old_string": "a", "new_string": "b"}
	case plugins.ToolTask:
		return map[string]any{"agent": "thread", "prompt": "look"}
	}
	return map[string]any{"path": "src/main.go", "pattern": "*", "command": "true", "url": "http://127.0.0.1/"}
}

func newGate(t *testing.T, cfg *config.Config, project string) *Gate {
	t.Helper()
	g, err := NewGate(cfg, nil, GateProject(project))
	if err != nil {
		t.Fatalf("NewGate: %v", err)
	}
	return g
}

// gateProject makes a project with .weave/plans, a source file and a
// directory outside the project to point links at.
func gateProject(t *testing.T) (project, outside string) {
	t.Helper()
	base := t.TempDir()
	project = filepath.Join(base, "proj")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(project, ".weave", "plans"), filepath.Join(project, "src"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(project, "src", "main.go"), "package main\n")
	writeFile(t, filepath.Join(project, ".weave", "plans", "real.md"), "# Real\n")
	writeFile(t, filepath.Join(outside, "x.md"), "# Outside\n")
	return project, outside
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func deniedReason(t *testing.T, err error) string {
	t.Helper()
	var de *DeniedError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *DeniedError", err, err)
	}
	return de.Reason
}

func TestGateMatrixEveryCell(t *testing.T) {
	project, _ := gateProject(t)
	g := newGate(t, nil, project)
	tools := agents.ToolNames()
	if len(specMatrix) != len(agents.RoleNames()) {
		t.Fatalf("specMatrix has %d rows, want one per role (%d)", len(specMatrix), len(agents.RoleNames()))
	}
	for _, role := range agents.RoleNames() {
		cells := strings.Fields(specMatrix[role])
		if len(cells) != len(tools) {
			t.Fatalf("specMatrix[%s] has %d cells, want %d", role, len(cells), len(tools))
		}
		for i, tool := range tools {
			want := cells[i]
			t.Run(role+"/"+tool, func(t *testing.T) {
				c := Caller{Agent: role}
				err := g.Check(context.Background(), c, plugins.ToolCall{Tool: tool, Args: cellArgs(tool)})
				switch want {
				case "v":
					if err != nil {
						t.Errorf("Check(%s, %s) = %v, want allowed", role, tool, err)
					}
				case "x":
					if err == nil {
						t.Fatalf("Check(%s, %s) = nil, want denied", role, tool)
					}
					deniedReason(t, err)
					if got, want := err.Error(), "denied by the capability matrix ("+role+" has no "+tool+")"; got != want {
						t.Errorf("Check(%s, %s) = %q, want %q", role, tool, got, want)
					}
				case "m":
					if err == nil {
						t.Errorf("Check(%s, %s src/main.go) = nil, want denied (scope)", role, tool)
					}
					args := cellArgs(tool)
					args["path"] = ".weave/plans/new-plan.md"
					if err := g.Check(context.Background(), c, plugins.ToolCall{Tool: tool, Args: args}); err != nil {
						t.Errorf("Check(%s, %s .weave/plans/new-plan.md) = %v, want allowed", role, tool, err)
					}
				case "d":
					if err == nil {
						t.Fatalf("Check(%s, %s) = nil, want denied", role, tool)
					}
					if r := deniedReason(t, err); !strings.Contains(r, "never delegates") {
						t.Errorf("Check(%s, %s) reason = %q, want \"never delegates\"", role, tool, r)
					}
				}
				inAllowed := false
				for _, a := range g.Allowed(c) {
					inAllowed = inAllowed || a == tool
				}
				if inAllowed != (want != "x") {
					t.Errorf("Allowed(%s) has %s = %v, want %v", role, tool, inAllowed, want != "x")
				}
			})
		}
	}
}

func TestGateDelegation(t *testing.T) {
	project, _ := gateProject(t)
	depth := func(n int) *config.Config {
		cfg := config.Default()
		cfg.Delegation.MaxDepth = n
		return cfg
	}
	narrowLoom := config.Default()
	narrowLoom.Agents["loom"] = config.AgentConfig{Tools: []string{"read", "task"}}
	widenThread := config.Default()
	widenThread.Agents["thread"] = config.AgentConfig{Tools: []string{"read", "write"}, AllowWiden: true}

	tests := []struct {
		name   string
		cfg    *config.Config
		caller Caller
		tool   string
		args   map[string]any
		// deny is a piece of the reason; "" means allowed.
		deny string
	}{
		{"loom delegates to thread", nil, Caller{Agent: "loom"}, "task", map[string]any{"agent": "thread"}, ""},
		{"loom delegates to each subagent", nil, Caller{Agent: "loom"}, "task", map[string]any{"agent": "Warp"}, ""},
		{"loom cannot delegate to tapestry", nil, Caller{Agent: "loom"}, "task", map[string]any{"agent": "tapestry"}, `loom may not delegate to tapestry; it may delegate only to thread, spindle, pattern, weft, warp, shuttle`},
		{"loom cannot delegate to itself", nil, Caller{Agent: "loom"}, "task", map[string]any{"agent": "loom"}, "delegate only to"},
		{"task without agent", nil, Caller{Agent: "loom"}, "task", map[string]any{}, "needs an agent argument"},
		{"tapestry never delegates", nil, Caller{Agent: "tapestry"}, "task", map[string]any{"agent": "thread"}, "tapestry has no task"},
		{"shuttle has task but nobody", nil, Caller{Agent: "shuttle"}, "task", map[string]any{"agent": "thread"}, "shuttle never delegates"},
		{"delegated thread cannot write", nil, Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "write", map[string]any{"path": "src/main.go"}, "thread has no write"},
		{"delegated thread reads", nil, Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "read", map[string]any{"path": "src/main.go"}, ""},
		{"delegated pattern keeps its scope", nil, Caller{Agent: "pattern", Chain: []string{"loom", "pattern"}}, "write", map[string]any{"path": "src/main.go"}, "may only write .md files under .weave/"},
		{"delegated pattern writes a plan", nil, Caller{Agent: "pattern", Chain: []string{"loom", "pattern"}}, "write", map[string]any{"path": ".weave/plans/p.md"}, ""},
		{"delegated subagent cannot delegate further", nil, Caller{Agent: "shuttle", Chain: []string{"loom", "shuttle"}}, "task", map[string]any{"agent": "thread"}, "never delegates"},
		{"ceiling from above", narrowLoom, Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "bash", map[string]any{"command": "ls"}, "loom has no bash, and thread works for loom (loom > thread): a delegated agent never gets more than the agents above it; config agents.loom.tools leaves it out"},
		{"ceiling from above, own row fine", narrowLoom, Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "read", map[string]any{"path": "x"}, ""},
		{"widened row still capped by chain", widenThread, Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "write", map[string]any{"path": "x"}, ""},
		{"widened row capped by narrowed loom", func() *config.Config {
			c := config.Default()
			c.Agents["thread"] = config.AgentConfig{Tools: []string{"read", "write"}, AllowWiden: true}
			c.Agents["loom"] = config.AgentConfig{Tools: []string{"read", "task"}}
			return c
		}(), Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "write", map[string]any{"path": "x"}, "loom has no write, and thread works for loom"},
		{"impossible chain tapestry > thread", nil, Caller{Agent: "thread", Chain: []string{"tapestry", "thread"}}, "read", map[string]any{"path": "x"}, "tapestry never delegates"},
		{"impossible chain loom > tapestry", nil, Caller{Agent: "tapestry", Chain: []string{"loom", "tapestry"}}, "read", map[string]any{"path": "x"}, "loom delegates only to"},
		{"max_depth 0 forbids delegation", depth(0), Caller{Agent: "loom"}, "task", map[string]any{"agent": "thread"}, "beyond delegation.max_depth 0"},
		{"max_depth 0: a delegated chain is too deep", depth(0), Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "read", map[string]any{"path": "x"}, "is 1 deep, beyond delegation.max_depth 0"},
		{"max_depth 1 allows one level", depth(1), Caller{Agent: "loom"}, "task", map[string]any{"agent": "thread"}, ""},
		{"chain deeper than max_depth", depth(1), Caller{Agent: "thread", Chain: []string{"loom", "shuttle", "thread"}}, "read", map[string]any{"path": "x"}, "is 2 deep, beyond delegation.max_depth 1"},
		{"agent not at the end of its chain", nil, Caller{Agent: "loom", Chain: []string{"loom", "thread"}}, "write", map[string]any{"path": "x"}, "does not match the end of its delegation chain"},
		{"unknown agent", nil, Caller{Agent: "weaver"}, "read", map[string]any{"path": "x"}, `"weaver" is not an agent`},
		{"unknown tool", nil, Caller{Agent: "loom"}, "rm", nil, `there is no tool "rm"`},
		{"agent names are case-insensitive", nil, Caller{Agent: "Thread", Chain: []string{"LOOM", "Thread"}}, "read", map[string]any{"path": "x"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(t, tc.cfg, project)
			err := g.Check(context.Background(), tc.caller, plugins.ToolCall{Tool: tc.tool, Args: tc.args})
			if tc.deny == "" {
				if err != nil {
					t.Errorf("Check(%s, %s) = %v, want allowed", tc.caller, tc.tool, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check(%s, %s) = nil, want denied with %q", tc.caller, tc.tool, tc.deny)
			}
			if r := deniedReason(t, err); !strings.Contains(r, tc.deny) {
				t.Errorf("Check(%s, %s) reason = %q, want it to contain %q", tc.caller, tc.tool, r, tc.deny)
			}
		})
	}
}

func TestGatePatternBypassAttempts(t *testing.T) {
	project, outside := gateProject(t)
	weave := filepath.Join(project, ".weave")
	// Links an attacker might plant, or a user might have.
	symlink(t, filepath.Join(outside, "x.md"), filepath.Join(weave, "plans", "out.md"))
	symlink(t, filepath.Join(project, "src"), filepath.Join(weave, "plans", "srcdir"))
	symlink(t, outside, filepath.Join(weave, "ext"))
	symlink(t, filepath.Join(outside, "nothing-yet.md"), filepath.Join(weave, "plans", "dangling.md"))
	symlink(t, "../../src/main.go", filepath.Join(weave, "plans", "rel-dangle.md"))
	symlink(t, "real.md", filepath.Join(weave, "plans", "alias.md"))
	symlink(t, weave, filepath.Join(project, "weave-link"))
	// A second project whose .weave is itself a link to elsewhere.
	linked := filepath.Join(filepath.Dir(project), "linked")
	if err := os.MkdirAll(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "weave-elsewhere", "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(outside, "weave-elsewhere"), filepath.Join(linked, ".weave"))

	tests := []struct {
		name    string
		project string
		path    string
		allowed bool
	}{
		{"plan file", project, ".weave/plans/x.md", true},
		{"existing plan", project, ".weave/plans/real.md", true},
		{"new nested directories", project, ".weave/plans/a/b/c.md", true},
		{"md directly under .weave", project, ".weave/notes.md", true},
		{"absolute path inside .weave", project, filepath.Join(project, ".weave", "plans", "abs.md"), true},
		{"link to a plan inside .weave", project, ".weave/plans/alias.md", true},
		{"dot-dot out of the project", project, "../x.go", false},
		{"dot-dot md out of the project", project, "../outside/x.md", false},
		{"dot-dot out of .weave", project, ".weave/../main.go", false},
		{"dot-dot md out of .weave", project, ".weave/../README.md", false},
		{"dot-dot through missing dirs", project, ".weave/plans/new/../../../src/x.md", false},
		{"source file", project, "src/main.go", false},
		{"md outside .weave", project, "docs/x.md", false},
		{"upper-case extension", project, ".weave/plans/x.MD", false},
		{"mixed-case extension", project, ".weave/plans/x.Md", false},
		{"not markdown", project, ".weave/state.json", false},
		{"config under .weave", project, ".weave/config.yaml", false},
		{".weave itself", project, ".weave", false},
		{"bare .md name", project, ".weave/.md", false},
		{"symlink file to outside", project, ".weave/plans/out.md", false},
		{"symlinked directory into src", project, ".weave/plans/srcdir/x.md", false},
		{"symlinked directory to outside", project, ".weave/ext/x.md", false},
		{"dangling symlink to outside", project, ".weave/plans/dangling.md", false},
		{"dangling relative symlink to src", project, ".weave/plans/rel-dangle.md", false},
		{"absolute path outside", project, filepath.Join(outside, "x.md"), false},
		{"absolute /tmp path", project, "/tmp/evil.md", false},
		{"a link to .weave from the root", project, "weave-link/plans/x.md", true},
		{"path through a symlinked .weave", linked, ".weave/plans/x.md", false},
	}
	for _, tc := range tests {
		for _, tool := range []string{plugins.ToolWrite, plugins.ToolEdit} {
			t.Run(tc.name+"/"+tool, func(t *testing.T) {
				g := newGate(t, nil, tc.project)
				err := g.Check(context.Background(), Caller{Agent: "pattern"}, plugins.ToolCall{Tool: tool, Args: map[string]any{"path": tc.path}})
				if tc.allowed {
					if err != nil {
						t.Errorf("Check(pattern, %s %s) = %v, want allowed", tool, tc.path, err)
					}
					return
				}
				if err == nil {
					t.Fatalf("Check(pattern, %s %s) = nil, want denied", tool, tc.path)
				}
				if r := deniedReason(t, err); !strings.Contains(r, "may only "+tool+" .md files under .weave/") {
					t.Errorf("Check(pattern, %s %s) reason = %q, want the scope explained", tool, tc.path, r)
				}
			})
		}
	}
	t.Run("claude's file_path argument", func(t *testing.T) {
		g := newGate(t, nil, project)
		err := g.Check(context.Background(), Caller{Agent: "pattern"}, plugins.ToolCall{Tool: "write", Args: map[string]any{"file_path": "src/main.go"}})
		if err == nil {
			t.Errorf("Check(pattern, write file_path=src/main.go) = nil, want denied")
		}
	})
	t.Run("no path", func(t *testing.T) {
		g := newGate(t, nil, project)
		err := g.Check(context.Background(), Caller{Agent: "pattern"}, plugins.ToolCall{Tool: "write", Args: map[string]any{"content": "x"}})
		if err == nil || !strings.Contains(deniedReason(t, err), "names no path") {
			t.Errorf("Check(pattern, write without path) = %v, want denied for no path", err)
		}
	})
	t.Run("no project", func(t *testing.T) {
		g := newGate(t, nil, "")
		err := g.Check(context.Background(), Caller{Agent: "pattern"}, plugins.ToolCall{Tool: "write", Args: map[string]any{"path": ".weave/plans/x.md"}})
		if err == nil {
			t.Errorf("Check(pattern, write) without a project = nil, want denied")
		}
	})
	t.Run("the scope binds only pattern", func(t *testing.T) {
		g := newGate(t, nil, project)
		if err := g.Check(context.Background(), Caller{Agent: "tapestry"}, plugins.ToolCall{Tool: "write", Args: map[string]any{"path": "src/main.go"}}); err != nil {
			t.Errorf("Check(tapestry, write src/main.go) = %v, want allowed", err)
		}
	})
}

func TestGateConfigNarrowAndWiden(t *testing.T) {
	project, _ := gateProject(t)
	t.Run("narrowing", func(t *testing.T) {
		cfg := config.Default()
		cfg.Agents["thread"] = config.AgentConfig{Tools: []string{"grep", "read"}}
		var logs bytes.Buffer
		g, err := NewGate(cfg, slog.New(slog.NewTextHandler(&logs, nil)), GateProject(project))
		if err != nil {
			t.Fatalf("NewGate: %v", err)
		}
		row := g.Rows()[3]
		want := GateRow{Role: row.Role, Tools: []string{"read", "grep"}, Narrowed: []string{"bash", "glob", "webfetch", "skill"}}
		if diff := cmp.Diff(want, row); diff != "" {
			t.Errorf("Rows()[thread] (-want +got):\n%s", diff)
		}
		err = g.Check(context.Background(), Caller{Agent: "thread"}, plugins.ToolCall{Tool: "glob", Args: map[string]any{"pattern": "*"}})
		if err == nil || !strings.Contains(deniedReason(t, err), "config agents.thread.tools leaves it out") {
			t.Errorf("Check(thread, glob) = %v, want denied naming the config", err)
		}
		if strings.Contains(logs.String(), "widened") {
			t.Errorf("narrowing logged a widening: %s", logs.String())
		}
	})
	t.Run("widening without allow_widen", func(t *testing.T) {
		cfg := config.Default()
		cfg.Agents["thread"] = config.AgentConfig{Tools: []string{"read", "write", "edit"}}
		_, err := NewGate(cfg, nil)
		for _, s := range []string{"agents.thread.tools", "write, edit are outside thread's row", "allow_widen: true"} {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Errorf("NewGate(thread widened) = %v, want an error containing %q", err, s)
			}
		}
	})
	t.Run("widening with allow_widen is logged", func(t *testing.T) {
		cfg := config.Default()
		cfg.Agents["thread"] = config.AgentConfig{Tools: []string{"read", "write"}, AllowWiden: true}
		var logs bytes.Buffer
		g, err := NewGate(cfg, slog.New(slog.NewTextHandler(&logs, nil)), GateProject(project))
		if err != nil {
			t.Fatalf("NewGate: %v", err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "agent=thread") || !strings.Contains(logs.String(), "widened") {
			t.Errorf("log = %q, want a warning naming thread's widened row", logs.String())
		}
		row := g.Rows()[3]
		if diff := cmp.Diff([]string{"write"}, row.Widened); diff != "" {
			t.Errorf("Rows()[thread].Widened (-want +got):\n%s", diff)
		}
		if err := g.Check(context.Background(), Caller{Agent: "thread"}, plugins.ToolCall{Tool: "write", Args: map[string]any{"path": "x"}}); err != nil {
			t.Errorf("Check(thread, write) after widening = %v, want allowed", err)
		}
	})
	t.Run("widening pattern keeps its scope", func(t *testing.T) {
		cfg := config.Default()
		cfg.Agents["pattern"] = config.AgentConfig{Tools: []string{"read", "write", "plan_check"}, AllowWiden: true}
		g := newGate(t, cfg, project)
		if err := g.Check(context.Background(), Caller{Agent: "pattern"}, plugins.ToolCall{Tool: "write", Args: map[string]any{"path": "src/main.go"}}); err == nil {
			t.Errorf("Check(pattern, write src/main.go) after widening = nil, want denied by the scope")
		}
	})
	t.Run("from a project config file", func(t *testing.T) {
		writeFile(t, filepath.Join(project, ".weave", "config.yaml"), "agents:\n  shuttle:\n    tools: [read, bash]\n  weft:\n    tools: [read, task]\n")
		cfg, _, err := config.Load(config.Options{ProjectDir: project, UserConfigDir: t.TempDir()})
		if err != nil {
			t.Fatalf("config.Load: %v", err)
		}
		_, err = NewGate(cfg, nil)
		if err == nil || !strings.Contains(err.Error(), "agents.weft.tools: task is outside weft's row") {
			t.Errorf("NewGate(weft widened by file) = %v, want the widening refused", err)
		}
		if err != nil && strings.Contains(err.Error(), "shuttle") {
			t.Errorf("NewGate error blames shuttle, which only narrowed: %v", err)
		}
	})
}

func TestGateAllowed(t *testing.T) {
	cfg := config.Default()
	cfg.Agents["loom"] = config.AgentConfig{Tools: []string{"read", "grep", "task"}}
	g := newGate(t, cfg, "")
	tests := []struct {
		caller Caller
		want   []string
	}{
		{Caller{Agent: "thread"}, []string{"read", "bash", "glob", "grep", "webfetch", "skill"}},
		{Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, []string{"read", "grep"}},
		{Caller{Agent: "loom"}, []string{"read", "grep", "task"}},
		{Caller{Agent: "thread", Chain: []string{"tapestry", "thread"}}, nil},
		{Caller{Agent: "nobody"}, nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, g.Allowed(tc.caller)); diff != "" {
			t.Errorf("Allowed(%s) (-want +got):\n%s", tc.caller, diff)
		}
	}
}

func TestDeniedErrorMessage(t *testing.T) {
	err := &DeniedError{Agent: "thread", Tool: "write", Rule: RuleMatrix, Reason: "thread has no write"}
	if got, want := err.Error(), "denied by the capability matrix (thread has no write)"; got != want {
		t.Errorf("DeniedError.Error() = %q, want %q", got, want)
	}
}
