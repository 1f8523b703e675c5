package agents

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/plugintest"
)

func toolCalls(calls ...plugins.ToolCall) plugins.ChatResponse {
	return plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant, ToolCalls: calls}, StopReason: "tool_calls"}
}

func answer(text string) plugins.ChatResponse {
	return plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant, Content: text}, StopReason: "end"}
}

func specNames(specs []plugins.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func TestLoopOffersExactlyTheRoleRow(t *testing.T) {
	for _, r := range Roles() {
		if r.Name == Tapestry {
			continue // served by TapestryAgent
		}
		t.Run(r.Name, func(t *testing.T) {
			h := plugintest.NewFakeHost()
			h.QueueReply(answer("ok"))
			if _, err := (ModelAgent{Role: r}).Handle(context.Background(), h, plugins.AgentRequest{Prompt: "hi"}); err != nil {
				t.Fatal(err)
			}
			got := specNames(h.ChatRequests()[0].Tools)
			if diff := cmp.Diff(r.Tools, got); diff != "" {
				t.Errorf("tools offered (-row +offered):\n%s", diff)
			}
		})
	}
}

func TestOverridesApplyModelTemperaturePromptAndRow(t *testing.T) {
	temp := 0.7
	a := NewModelAgent(role(t, Loom), Overrides{
		Tools: []string{plugins.ToolRead, plugins.ToolGrep}, Model: "small-model", Temperature: &temp, PromptAppend: "Answer in French.",
	})
	h := plugintest.NewFakeHost()
	h.QueueReply(answer("d'accord"))
	if _, err := a.Handle(context.Background(), h, plugins.AgentRequest{Prompt: "hi"}); err != nil {
		t.Fatal(err)
	}
	req := h.ChatRequests()[0]
	if req.Model != "small-model" || req.Temperature == nil || *req.Temperature != 0.7 {
		t.Errorf("model %q, temperature %v; want small-model and 0.7", req.Model, req.Temperature)
	}
	if !strings.HasPrefix(req.System, role(t, Loom).Prompt[:40]) || !strings.HasSuffix(strings.TrimSpace(req.System), "Answer in French.") {
		t.Errorf("system prompt does not end with the appended text:\n%s", req.System)
	}
	if diff := cmp.Diff([]string{plugins.ToolRead, plugins.ToolGrep}, specNames(req.Tools)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	// Without overrides the role's own settings stand.
	plain := NewModelAgent(role(t, Loom), Overrides{})
	if plain.Model != "" || plain.Role.Temperature != 0.3 || plain.Role.Prompt != role(t, Loom).Prompt {
		t.Errorf("NewModelAgent(no overrides) changed the role: %+v", plain)
	}
}

// TestParallelCallsRunConcurrently: two calls of one turn are both in the
// host before either returns; run one after the other, the first would
// wait for the second forever (bounded by the test's context).
func TestParallelCallsRunConcurrently(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	h := plugintest.NewFakeHost()
	h.OnToolFunc(plugins.ToolRead, func(c plugins.ToolCall) (plugins.ToolResult, error) {
		arrived.Done()
		select {
		case <-both:
			return plugins.ToolResult{Output: "content of " + c.Args["path"].(string)}, nil
		case <-ctx.Done():
			return plugins.ToolResult{IsError: true, Output: "calls ran one at a time"}, nil
		}
	})
	h.QueueReply(toolCalls(
		plugins.ToolCall{ID: "a", Tool: plugins.ToolRead, Args: map[string]any{"path": "a.go"}},
		plugins.ToolCall{ID: "b", Tool: plugins.ToolRead, Args: map[string]any{"path": "b.go"}}))
	h.QueueReply(answer("read both"))
	resp, err := ModelAgent{Role: role(t, Thread)}.Handle(ctx, h, plugins.AgentRequest{Prompt: "read a and b"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Done {
		t.Fatalf("Handle() = %+v, want done", resp)
	}
	msgs := h.ChatRequests()[1].Messages
	results := msgs[len(msgs)-2:]
	if results[0].ToolCallID != "a" || results[0].Content != "content of a.go" || results[1].ToolCallID != "b" || results[1].Content != "content of b.go" {
		t.Errorf("results = %+v, want a's then b's, each tied to its call", results)
	}
}

func TestRefusedCallReachesTheModelWithItsReason(t *testing.T) {
	h := plugintest.NewFakeHost()
	h.OnTool(plugins.ToolWrite, plugins.ToolResult{Denied: true, IsError: true, Output: "thread may not use write (read-only role)"})
	h.QueueReply(toolCalls(plugins.ToolCall{ID: "w", Tool: plugins.ToolWrite, Args: map[string]any{"path": "x", "content": "y"}}))
	h.QueueReply(answer("I cannot write; here is the patch instead."))
	resp, err := ModelAgent{Role: role(t, Thread)}.Handle(context.Background(), h, plugins.AgentRequest{Prompt: "write x"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Done {
		t.Errorf("Handle() = %+v, want the model to carry on after the refusal", resp)
	}
	msgs := h.ChatRequests()[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != plugins.RoleTool || last.ToolCallID != "w" || !last.IsError ||
		!strings.Contains(last.Content, "refused") || !strings.Contains(last.Content, "read-only role") {
		t.Errorf("tool result = %+v, want an error result saying it was refused and why", last)
	}
}

func TestSameFailingCallThreeTimesStops(t *testing.T) {
	h := plugintest.NewFakeHost()
	h.OnTool(plugins.ToolBash, plugins.ToolResult{IsError: true, ExitCode: 1, Output: "make: *** No rule to make target 'tset'"})
	bad := plugins.ToolCall{Tool: plugins.ToolBash, Args: map[string]any{"command": "make tset"}}
	other := plugins.ToolCall{Tool: plugins.ToolBash, Args: map[string]any{"command": "make lint"}}
	// The failing call twice, a different failing call, then the first
	// again: the third identical failure stops the loop.
	for _, c := range []plugins.ToolCall{bad, bad, other, bad} {
		h.QueueReply(toolCalls(c))
	}
	h.QueueReply(answer("never reached"))
	resp, err := ModelAgent{Role: role(t, Loom)}.Handle(context.Background(), h, plugins.AgentRequest{Prompt: "run the tests"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Done || !strings.Contains(resp.Error, "same call failed 3 times") || !strings.Contains(resp.Error, "make tset") ||
		!strings.Contains(resp.Error, "No rule to make target") {
		t.Errorf("Handle() = %+v, want a stop naming the call and its failure", resp)
	}
	if n := len(h.ToolCalls()); n != 4 {
		t.Errorf("%d tool calls, want 4", n)
	}
	if n := len(h.ChatRequests()); n != 4 {
		t.Errorf("model asked %d times, want 4 (no turn after the stop)", n)
	}
}

func TestSuccessResetsTheFailureCount(t *testing.T) {
	h := plugintest.NewFakeHost()
	var mu sync.Mutex
	n := 0
	h.OnToolFunc(plugins.ToolBash, func(plugins.ToolCall) (plugins.ToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == 3 {
			return plugins.ToolResult{Output: "ok"}, nil
		}
		return plugins.ToolResult{IsError: true, Output: "flaky"}, nil
	})
	call := plugins.ToolCall{Tool: plugins.ToolBash, Args: map[string]any{"command": "go test ./..."}}
	for range 5 {
		h.QueueReply(toolCalls(call))
	}
	h.QueueReply(answer("done"))
	resp, err := ModelAgent{Role: role(t, Loom)}.Handle(context.Background(), h, plugins.AgentRequest{Prompt: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Done {
		t.Errorf("Handle() = %+v; two failures, a success, two failures must not stop the loop", resp)
	}
}

func TestMissingCallIDsAreFilledIn(t *testing.T) {
	h := plugintest.NewFakeHost()
	h.OnTool(plugins.ToolGlob, plugins.ToolResult{Output: "a.go"})
	h.QueueReply(toolCalls(plugins.ToolCall{Tool: plugins.ToolGlob, Args: map[string]any{"pattern": "*.go"}},
		plugins.ToolCall{Tool: plugins.ToolGlob, Args: map[string]any{"pattern": "*.md"}}))
	h.QueueReply(answer("ok"))
	if _, err := (ModelAgent{Role: role(t, Thread)}).Handle(context.Background(), h, plugins.AgentRequest{Prompt: "list"}); err != nil {
		t.Fatal(err)
	}
	msgs := h.ChatRequests()[1].Messages
	asst := msgs[1]
	ids := []string{asst.ToolCalls[0].ID, asst.ToolCalls[1].ID, msgs[2].ToolCallID, msgs[3].ToolCallID}
	if ids[0] == "" || ids[0] == ids[1] || ids[2] != ids[0] || ids[3] != ids[1] || slices.Contains(ids, "") {
		t.Errorf("ids = %q, want two distinct ids, each tying a result to its call", ids)
	}
}

func TestResumableClosesCallsCutOffMidTurn(t *testing.T) {
	h := []plugins.ChatMessage{
		{Role: plugins.RoleUser, Content: "q"},
		{Role: plugins.RoleAssistant, ToolCalls: []plugins.ToolCall{{ID: "a", Tool: "read"}, {ID: "b", Tool: "read"}}},
		{Role: plugins.RoleTool, ToolCallID: "a", Content: "ok"},
		{Role: plugins.RoleTool, ToolCallID: "zz", Content: "orphan"},
	}
	got := Resumable(h)
	if len(got) != 4 || got[2].ToolCallID != "a" || got[3].ToolCallID != "b" || !got[3].IsError {
		t.Fatalf("Resumable = %+v, want the orphan dropped and call b closed as interrupted", got)
	}
	if len(h) != 4 || h[3].ToolCallID != "zz" {
		t.Error("Resumable changed its input")
	}
}
