package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/plugintest"
)

func role(t *testing.T, name string) Role {
	t.Helper()
	r, ok := RoleByName(name)
	if !ok {
		t.Fatalf("no role %q", name)
	}
	return r
}

func TestModelAgentLoopRunsToolCallsUntilTheModelAnswers(t *testing.T) {
	h := plugintest.NewFakeHost()
	h.OnTool(plugins.ToolRead, plugins.ToolResult{Output: "   1\tpackage main"})
	h.QueueReply(plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant,
		ToolCalls: []plugins.ToolCall{{ID: "call-1", Tool: plugins.ToolRead, Args: map[string]any{"path": "main.go"}}}}, StopReason: "tool_calls"})
	h.QueueReply(plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant, Content: "main.go is package main"}, StopReason: "end"})

	a := ModelAgent{Role: role(t, Thread)}
	resp, err := a.Handle(context.Background(), h, plugins.AgentRequest{Prompt: "what package is main.go?"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Done || resp.Output != "main.go is package main" {
		t.Fatalf("Handle() = %+v, want done with the model's answer", resp)
	}
	calls := h.ToolCalls()
	if len(calls) != 1 || calls[0].Tool != plugins.ToolRead || calls[0].Args["path"] != "main.go" {
		t.Errorf("tool calls = %+v, want one read of main.go", calls)
	}
	chats := h.ChatRequests()
	if len(chats) != 2 {
		t.Fatalf("model was asked %d times, want 2", len(chats))
	}
	second := chats[1].Messages
	last := second[len(second)-1]
	if last.Role != plugins.RoleTool || last.ToolCallID != "call-1" || !strings.Contains(last.Content, "package main") {
		t.Errorf("the tool result fed back = %+v, want it tied to call-1", last)
	}
	if chats[0].System == "" || len(chats[0].Tools) != len(role(t, Thread).Tools) {
		t.Errorf("first chat: system %q, %d tools; want the role's prompt and its %d tools", chats[0].System, len(chats[0].Tools), len(role(t, Thread).Tools))
	}
}

func TestModelAgentWithoutModelSaysSo(t *testing.T) {
	resp, err := ModelAgent{Role: role(t, Loom)}.Handle(context.Background(), plugintest.NewFakeHost(), plugins.AgentRequest{Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Done || !strings.Contains(resp.Error, "no model configured") {
		t.Errorf("Handle() = %+v, want an error saying no model is configured", resp)
	}
}

func TestModelAgentStopsAfterMaxTurns(t *testing.T) {
	h := plugintest.NewFakeHost()
	h.OnTool(plugins.ToolGlob, plugins.ToolResult{Output: "a.go"})
	for range 3 {
		h.QueueReply(plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant,
			ToolCalls: []plugins.ToolCall{{ID: "c", Tool: plugins.ToolGlob, Args: map[string]any{"pattern": "*"}}}}})
	}
	resp, err := ModelAgent{Role: role(t, Thread), MaxTurns: 3}.Handle(context.Background(), h, plugins.AgentRequest{Prompt: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Done || !strings.Contains(resp.Error, "3 model turns") {
		t.Errorf("Handle() = %+v, want a stop after 3 turns", resp)
	}
}

// runbookRequest names task 2 of a plan "p" whose blocks are `make` (sh,
// line 5) and the verify block `test -f out` (bash, line 8).
func runbookRequest(t *testing.T) plugins.AgentRequest {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.md")
	body := "# P\n\n- [ ] 2. Build\n\n  ```sh\n  make\n  ```\n  ```bash verify\n  test -f out\n  ```\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return plugins.AgentRequest{Plan: path, Task: &plugins.TaskRef{Number: 2, Title: "Build"}}
}

func TestTapestryRunbook(t *testing.T) {
	tests := []struct {
		name    string
		results map[string]plugins.ToolResult // by command
		wantErr string
		ticked  bool
		// blockedBy is the hook the response names as having blocked.
		blockedBy string
	}{
		{name: "all blocks pass, task ticked", ticked: true},
		{name: "work block fails", results: map[string]plugins.ToolResult{"make": {ExitCode: 2, IsError: true}}, wantErr: "block at line 5 exited with status 2"},
		{name: "verify block fails", results: map[string]plugins.ToolResult{"test -f out": {ExitCode: 1, IsError: true}}, wantErr: "verify block at line 8 exited with status 1"},
		{name: "a block times out", results: map[string]plugins.ToolResult{"make": {ExitCode: -1, IsError: true, Output: "compiling\n[command timed out after 30m0s (runbook.block_timeout) and was killed with every process it started]\n"}},
			wantErr: "block at line 5 failed: [command timed out after 30m0s (runbook.block_timeout)"},
		{name: "the gate denies the block", results: map[string]plugins.ToolResult{"make": {Denied: true, IsError: true, Output: "denied: ... do not retry", Reason: "tapestry may not use bash: narrowed"}},
			wantErr: "block at line 5 was not allowed to run: tapestry may not use bash: narrowed"},
		{name: "a hook blocks the block", results: map[string]plugins.ToolResult{"make": {Denied: true, IsError: true, Output: "text for a model", BlockedBy: "no-make", Reason: "make is slow"}},
			wantErr: "blocked by no-make: make is slow (block at line 5)", blockedBy: "no-make"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := plugintest.NewFakeHost()
			h.OnToolFunc(plugins.ToolBash, func(c plugins.ToolCall) (plugins.ToolResult, error) {
				if c.Args["errexit"] != true {
					t.Errorf("bash call %v without errexit", c.Args)
				}
				return tc.results[strings.TrimSpace(c.Args["command"].(string))], nil
			})
			h.OnTool(plugins.ToolPlanCheck, plugins.ToolResult{Output: "ticked"})
			resp, err := NewTapestryAgent().Handle(context.Background(), h, runbookRequest(t))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && !strings.Contains(resp.Error, tc.wantErr) {
				t.Errorf("Handle() error = %q, want %q", resp.Error, tc.wantErr)
			}
			if resp.BlockedBy != tc.blockedBy {
				t.Errorf("Handle() BlockedBy = %q, want %q", resp.BlockedBy, tc.blockedBy)
			}
			if strings.Contains(resp.Error, "text for a model") || strings.Contains(resp.Error, "do not retry") {
				t.Errorf("Handle() error = %q holds what was written for a model", resp.Error)
			}
			var checked bool
			var shells []string
			for _, c := range h.ToolCalls() {
				switch c.Tool {
				case plugins.ToolPlanCheck:
					checked = c.Args["task"] == 2 && c.Args["plan"] == "p"
				case plugins.ToolBash:
					shells = append(shells, c.Args["shell"].(string))
				}
			}
			if checked != tc.ticked || resp.Done != tc.ticked {
				t.Errorf("ticked = %v, done = %v; want %v", checked, resp.Done, tc.ticked)
			}
			if tc.ticked && strings.Join(shells, ",") != "sh,bash" {
				t.Errorf("shells = %v, want each block's own", shells)
			}
		})
	}
}

func TestRunbookScriptsOrderWorkThenVerify(t *testing.T) {
	p := plans.Parse([]byte("- [ ] 1. T\n  ```sh verify\n  v1\n  ```\n  ```bash\n  w1\n  ```\n  ```go\n  not shell\n  ```\n  ```sh\n  w2\n  ```\n"))
	got, err := RunbookScripts(p.Tasks[0])
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, s := range got {
		codes = append(codes, strings.TrimSpace(s.Code))
	}
	if strings.Join(codes, ",") != "w1,w2,v1" {
		t.Errorf("RunbookScripts() order = %v, want w1,w2,v1", codes)
	}
	if _, err := RunbookScripts(plans.Parse([]byte("- [ ] 1. Think\n")).Tasks[0]); err == nil || !strings.Contains(err.Error(), "needs an agent model") {
		t.Errorf("RunbookScripts(no blocks) = %v, want ErrNeedsModel", err)
	}
}
