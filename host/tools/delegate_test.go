package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/plugins"
)

// writingAgent tries to write a file and reports what the host answered.
type writingAgent struct{}

func (writingAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.writer", Kind: plugins.KindAgent}, nil
}

func (writingAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	res, err := h.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolWrite, Args: map[string]any{"path": "out.txt", "content": req.Prompt}})
	if err != nil {
		return plugins.AgentResponse{}, err
	}
	if res.IsError {
		return plugins.AgentResponse{Output: "refused: " + res.Output, Done: true}, nil
	}
	return plugins.AgentResponse{Output: "wrote", Done: true}, nil
}

func TestInProcessDelegationKeepsTheCeiling(t *testing.T) {
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	gate, err := NewGate(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := New(project, cfg, gate, nil, WithAgents(func(string) plugins.Agent { return writingAgent{} }))
	if err != nil {
		t.Fatal(err)
	}
	loom := Caller{Agent: "loom"}
	tests := []struct {
		agent, want string
		wrote       bool
	}{
		// Shuttle may write, and so may Loom above it.
		{"shuttle", "wrote", true},
		// Thread is read-only: the delegated call is refused by the gate.
		{"thread", "refused", false},
		// Loom never delegates to Tapestry.
		{"tapestry", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.agent, func(t *testing.T) {
			os.Remove(filepath.Join(project, "out.txt"))
			res, err := tools.Call(context.Background(), loom, "s1", plugins.ToolCall{Tool: plugins.ToolTask, Args: map[string]any{"agent": tc.agent, "prompt": "hello"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if !res.Denied {
					t.Fatalf("task to %s = %+v, want a denial", tc.agent, res)
				}
				return
			}
			if !strings.HasPrefix(res.Output, tc.want) {
				t.Errorf("task to %s = %q, want %q…", tc.agent, res.Output, tc.want)
			}
			_, statErr := os.Stat(filepath.Join(project, "out.txt"))
			if (statErr == nil) != tc.wrote {
				t.Errorf("out.txt exists = %v, want %v", statErr == nil, tc.wrote)
			}
		})
	}
}

func TestChildSessionStaysAPlainBoundedName(t *testing.T) {
	long := strings.Repeat("a", 100)
	tests := []struct{ parent, prefix string }{
		{"chat-1", "chat-1.thread-"},
		{"", "thread-"},
		{long + ".pattern-abcdef", long + ".thread-"},
		{strings.Repeat("b", 125), "thread-"},
	}
	for _, tt := range tests {
		got := ChildSession(tt.parent, "thread")
		if !strings.HasPrefix(got, tt.prefix) || len(got) > maxSessionID || len(got) != len(tt.prefix)+6 {
			t.Errorf("ChildSession(%q) = %q, want %q and 6 hex digits, at most %d long", tt.parent, got, tt.prefix, maxSessionID)
		}
	}
	if a, b := ChildSession("s", "thread"), ChildSession("s", "thread"); a == b {
		t.Errorf("two delegations got one session %q", a)
	}
}

// askingAgent makes one model call in a context of its own, as a plugin
// across a process boundary does, and reports what the host answered.
type askingAgent struct{}

func (askingAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.asker", Kind: plugins.KindAgent}, nil
}

func (askingAgent) Handle(_ context.Context, h plugins.Host, _ plugins.AgentRequest) (plugins.AgentResponse, error) {
	if _, err := h.Complete(context.Background(), plugins.ChatRequest{}); err != nil {
		return plugins.AgentResponse{Output: "refused: " + err.Error(), Done: true}, nil
	}
	return plugins.AgentResponse{Output: "answered", Done: true}, nil
}

// TestDelegatedCallsAreTheDelegatingTasks has a worker's task delegate to
// an agent whose model call comes back without the task's context: the
// call is still held to that task's budget.
func TestDelegatedCallsAreTheDelegatingTasks(t *testing.T) {
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	gate, err := NewGate(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ledger := budget.New(0)
	model := func(string, string) func(context.Context, plugins.ChatRequest) (plugins.ChatResponse, error) {
		return func(ctx context.Context, _ plugins.ChatRequest) (plugins.ChatResponse, error) {
			return plugins.ChatResponse{}, ledger.CheckFor(ctx, "m", 1, true)
		}
	}
	tools, err := New(project, cfg, gate, nil, WithModel(model), WithAgents(func(string) plugins.Agent { return askingAgent{} }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ledger.Scope(context.Background(), "7", "7 (Seven)", 0.5)
	res, err := tools.Call(ctx, Caller{Agent: "loom"}, "s1", plugins.ToolCall{Tool: plugins.ToolTask, Args: map[string]any{"agent": "shuttle", "prompt": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, "task 7 (Seven)'s budget") || ledger.TrippedFor("7") == nil {
		t.Errorf("delegated call = %q, want it refused by task 7's budget", res.Output)
	}
}
