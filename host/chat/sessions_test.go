package chat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/plugins"
)

// TestSessionsTreeAndTokens: a delegation's child session names its
// parent, the parent's task result names the child, and the listing adds
// the child's tokens to its parent's total.
func TestSessionsTreeAndTokens(t *testing.T) {
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "task", Args: `{"agent":"thread","prompt":"look"}`}}, Usage: &modeltest.Usage{Input: 100, Output: 10}},
		modeltest.Turn{Text: "found it", Usage: &modeltest.Usage{Input: 40, Output: 4, CacheRead: 7}},
		modeltest.Turn{Text: "done", Usage: &modeltest.Usage{Input: 120, Output: 2}},
	)
	m := newTestModelService(t, srv, &recordingHook{})
	project := strings.TrimSuffix(m.sessions.dir, "/.weave/sessions")
	ctx := context.Background()
	ask := []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "find it"}}
	resp, err := m.ModelFunc("s1", "loom")(ctx, plugins.ChatRequest{Messages: ask})
	if err != nil || len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("first call = %+v, %v", resp, err)
	}
	call := resp.Message.ToolCalls[0]
	child := tools.ChildSession("s1", "thread")
	m.Link("s1", child, "loom", call.ID)
	if _, err := m.ModelFunc(child, "thread")(ctx, plugins.ChatRequest{Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "look"}}}); err != nil {
		t.Fatal(err)
	}
	conv := append(ask, resp.Message, plugins.ChatMessage{Role: plugins.RoleTool, ToolCallID: call.ID, Content: "found it"})
	if _, err := m.ModelFunc("s1", "loom")(ctx, plugins.ChatRequest{Messages: conv}); err != nil {
		t.Fatal(err)
	}

	if !strings.HasPrefix(child, "s1.thread-") {
		t.Errorf("ChildSession(s1, thread) = %q, want it under s1", child)
	}
	list, err := Sessions(project)
	if err != nil || len(list) != 2 {
		t.Fatalf("Sessions = %+v, %v; want two", list, err)
	}
	byID := map[string]SessionSummary{}
	for _, s := range list {
		byID[s.ID] = s
	}
	p, c := byID["s1"], byID[child]
	if p.Agent != "loom" || p.Parent != "" || len(p.Children) != 1 || p.Children[0] != child || p.Messages != 4 {
		t.Errorf("parent = %+v, want loom's, with its child and 4 messages", p)
	}
	if p.Tokens != (Tokens{Input: 220, Output: 12}) || p.Total != (Tokens{Input: 260, Output: 16, CacheRead: 7}) {
		t.Errorf("parent tokens %+v, total %+v; want its own, and with its child's", p.Tokens, p.Total)
	}
	if c.Agent != "thread" || c.Parent != "s1" || c.ParentAgent != "loom" {
		t.Errorf("child = %+v, want thread's, delegated by loom from s1", c)
	}
	s, err := ReadSession(project, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var linked string
	for _, l := range s.Lines {
		if l.Message != nil && l.Message.Role == plugins.RoleTool {
			linked = l.Child
		}
	}
	if linked != child || s.ByAgent["loom"].Input != 220 {
		t.Errorf("s1's task result names %q, by agent %+v; want %q and loom's tokens", linked, s.ByAgent, child)
	}
	if got, err := SessionTokens(project, []string{"s1"}); err != nil || got != p.Total {
		t.Errorf("SessionTokens(s1) = %+v, %v; want %+v", got, err, p.Total)
	}
	if latest, err := LatestSession(project); err != nil || latest.ID != "s1" {
		t.Errorf("LatestSession = %+v, %v; want s1, not its delegation", latest, err)
	}
	for _, id := range []string{"nope", "../etc/passwd"} {
		if _, err := ReadSession(project, id); !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), "weave sessions list") {
			t.Errorf("ReadSession(%q) = %v, want ErrNoSession saying what to run", id, err)
		}
	}
	// The start of an id names the one session it starts.
	if cs, err := ReadSession(project, child[:len(child)-3]); err != nil || cs.ID != child {
		t.Errorf("ReadSession(start of %q) = %+v, %v; want that session", child, cs, err)
	}
	dir := layout.NewProject(project).Sessions()
	for _, id := range []string{"twin-a", "twin-b"} {
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadSession(project, "twin-"); err == nil || !strings.Contains(err.Error(), "twin-a, twin-b") {
		t.Errorf("ReadSession(start of two) = %v, want an error naming both", err)
	}
	// The start of a session's id means that session, not the sessions
	// it delegated to, whose ids start with it.
	for _, id := range []string{"root-1", "root-1.thread-a1b2c3", "root-1.thread-a1b2c3.weft-d4e5f6"} {
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rs, err := ReadSession(project, "root"); err != nil || rs.ID != "root-1" {
		t.Errorf("ReadSession(start of a session that delegated) = %+v, %v; want root-1", rs, err)
	}
	if rs, err := ReadSession(project, "root-1.thr"); err != nil || rs.ID != "root-1.thread-a1b2c3" {
		t.Errorf("ReadSession(start of a delegation) = %+v, %v; want root-1.thread-a1b2c3", rs, err)
	}
}

// TestInterruptedCallStaysInTheConversation: a call cut off by its context
// leaves the question and the text written so far, for the next turn.
func TestInterruptedCallStaysInTheConversation(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "partial words here", Hold: hold})
	m := newTestModelService(t, srv, &recordingHook{})
	ctx, cancel := context.WithCancel(context.Background())
	stop := m.Observe(func(ev Event) {
		if ev.Type == ModelDelta {
			cancel()
		}
	})
	defer stop()
	_, err := m.ModelFunc("s1", "loom")(ctx, plugins.ChatRequest{Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "tell me"}}})
	if err == nil {
		t.Fatal("the cut-off call returned no error")
	}
	for name, read := range map[string]func() ([]plugins.ChatMessage, error){
		"memory":     func() ([]plugins.ChatMessage, error) { return m.History("s1", "loom") },
		"transcript": func() ([]plugins.ChatMessage, error) { return m.sessions.history("s1", "loom") },
	} {
		got, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Content != "tell me" || got[1].Role != plugins.RoleAssistant || !strings.HasPrefix(got[1].Content, "partial") ||
			!strings.HasSuffix(got[1].Content, "[interrupted]") {
			t.Errorf("%s history = %+v, want the question and the cut-off answer", name, got)
		}
	}
}
