package plugintest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/plugintest"
)

// rmGuard is a sample third-party hook: it blocks recursive deletes of the
// filesystem root and adds a note to every other bash call.
type rmGuard struct{}

func (rmGuard) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "rm-guard", Version: "1.2.3", Events: []string{plugins.EventToolExecuteBefore}, Priority: -10}, nil
}

func (rmGuard) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Tool != plugins.ToolBash {
		return plugins.Decision{Action: plugins.Allow}, nil
	}
	cmd, ok := ev.Args["command"].(string)
	if !ok {
		return plugins.Decision{}, fmt.Errorf("bash call without a command: %v", ev.Args)
	}
	if strings.Contains(cmd, "rm -rf /") && !strings.Contains(cmd, "rm -rf /tmp") {
		return plugins.Decision{Action: plugins.Block, Reason: "rm -rf / is not allowed"}, nil
	}
	if strings.HasPrefix(cmd, "panic") {
		panic("guard bug")
	}
	return plugins.Decision{Action: plugins.Modify, Args: map[string]any{"command": cmd, "timeout": 30.0}, Context: "checked by rm-guard"}, nil
}

func TestSampleHook(t *testing.T) {
	hook := plugintest.ConnectHook(t, rmGuard{})
	ctx := context.Background()
	tests := []struct {
		name    string
		ev      plugins.Event
		want    plugins.Decision
		wantErr string
	}{
		{
			name: "blocks rm -rf /",
			ev:   plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: "bash", Args: map[string]any{"command": "sudo rm -rf / "}},
			want: plugins.Decision{Action: plugins.Block, Reason: "rm -rf / is not allowed"},
		},
		{
			name: "modifies other commands",
			ev:   plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: "bash", Args: map[string]any{"command": "rm -rf /tmp/x"}},
			want: plugins.Decision{Action: plugins.Modify, Args: map[string]any{"command": "rm -rf /tmp/x", "timeout": 30.0}, Context: "checked by rm-guard"},
		},
		{
			name: "allows other tools",
			ev:   plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: "read", Args: map[string]any{"path": "a.go"}},
			want: plugins.Decision{Action: plugins.Allow},
		},
		{
			name:    "hook error is an error",
			ev:      plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: "bash"},
			wantErr: "bash call without a command",
		},
		{
			name:    "hook panic is an error",
			ev:      plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: "bash", Args: map[string]any{"command": "panic now"}},
			wantErr: "guard bug",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hook.Handle(ctx, tt.ev)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Handle(%v) error = %v, want %q", tt.ev.Args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Handle(%v): %v", tt.ev.Args, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Handle(%v) mismatch (-want +got):\n%s", tt.ev.Args, diff)
			}
		})
	}
	info, err := hook.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := plugins.Info{Name: "rm-guard", Version: "1.2.3", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore}, Priority: -10}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
}

// echoEvent returns the event it got as the decision's context, to check that
// every field crosses the wire.
type echoEvent struct{ got chan plugins.Event }

func (echoEvent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "echo", Events: plugins.Events}, nil
}

func (e echoEvent) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	e.got <- ev
	return plugins.Decision{}, nil
}

func TestEventCrossesTheWire(t *testing.T) {
	h := echoEvent{got: make(chan plugins.Event, 1)}
	hook := plugintest.ConnectHook(t, h)
	ev := plugins.Event{
		Name: plugins.EventToolExecuteAfter, SessionID: "s", Agent: "tapestry", Cwd: "/p", Tool: "bash",
		Args:    map[string]any{"command": "go test", "n": 2.5, "list": []any{"a", true}},
		Result:  &plugins.ToolResult{Output: "ok", IsError: true, ExitCode: 3, Denied: true},
		Message: "hi", Command: "start-work", Arguments: "oauth", Plan: "oauth2-login",
		Task: &plugins.TaskRef{Number: 4, Title: "Add tests"}, Data: map[string]any{"tokens": 12.0},
		Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	d, err := hook.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != plugins.Allow {
		t.Errorf("empty action arrived as %q, want allow", d.Action)
	}
	if diff := cmp.Diff(ev, <-h.got); diff != "" {
		t.Errorf("event mismatch (-sent +received):\n%s", diff)
	}
}

// planner is a sample agent that uses every host service.
type planner struct{}

func (planner) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "planner", Version: "0.1.0", Role: "pattern"}, nil
}

func (planner) Handle(ctx context.Context, host plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	temp := 0.2
	chat := plugins.ChatRequest{System: "be brief", Temperature: &temp, MaxTokens: 100,
		Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: req.Prompt}},
		Tools:    []plugins.ToolSpec{{Name: "read", Description: "read a file", Schema: []byte(`{"type":"object"}`)}}}
	for range 3 {
		resp, err := host.Complete(ctx, chat)
		if errors.Is(err, plugins.ErrNoModel) {
			return plugins.AgentResponse{Error: err.Error()}, nil
		}
		if err != nil {
			return plugins.AgentResponse{}, err
		}
		chat.Messages = append(chat.Messages, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			if _, err := host.TickTask(ctx, req.Plan, *req.Task); err != nil {
				return plugins.AgentResponse{}, err
			}
			p, err := host.Progress(ctx, "")
			if err != nil {
				return plugins.AgentResponse{}, err
			}
			return plugins.AgentResponse{Output: fmt.Sprintf("%s (%d/%d)", resp.Message.Content, p.Done, p.Total), Done: true}, nil
		}
		for _, c := range resp.Message.ToolCalls {
			r, err := host.CallTool(ctx, c)
			if err != nil {
				return plugins.AgentResponse{}, err
			}
			chat.Messages = append(chat.Messages, plugins.ChatMessage{Role: plugins.RoleTool, ToolCallID: c.ID, Content: r.Output, IsError: r.IsError})
		}
		if err := host.Log(ctx, "debug", "tool round done"); err != nil {
			return plugins.AgentResponse{}, err
		}
	}
	return plugins.AgentResponse{Error: "too many rounds"}, nil
}

func TestSampleAgentWithFakeHost(t *testing.T) {
	agent := plugintest.ConnectAgent(t, planner{})
	host := plugintest.NewFakeHost()
	host.OnTool("read", plugins.ToolResult{Output: "package main"})
	host.SetPlan(plugins.PlanProgress{Plan: "demo", Total: 2, Done: 1, Tasks: []plugins.PlanTask{{Number: 1, Title: "A", Done: true}, {Number: 2, Title: "B"}}})
	call := plugins.ToolCall{ID: "call_1", Tool: "read", Args: map[string]any{"path": "main.go"}}
	host.QueueReply(plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant, ToolCalls: []plugins.ToolCall{call}},
		StopReason: "tool_calls", Usage: plugins.Usage{InputTokens: 10, OutputTokens: 5}})
	host.QueueReply(plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant, Content: "done"}, StopReason: "end"})

	resp, err := agent.Handle(context.Background(), host, plugins.AgentRequest{SessionID: "s", Prompt: "read main.go", Plan: "demo", Task: &plugins.TaskRef{Number: 2, Title: "B"}})
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	if diff := cmp.Diff(plugins.AgentResponse{Output: "done (2/2)", Done: true}, resp); diff != "" {
		t.Errorf("Handle mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plugins.ToolCall{call}, host.ToolCalls()); diff != "" {
		t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
	}
	chats := host.ChatRequests()
	if len(chats) != 2 {
		t.Fatalf("got %d chats, want 2", len(chats))
	}
	temp := 0.2
	wantSecond := plugins.ChatRequest{System: "be brief", Temperature: &temp, MaxTokens: 100,
		Messages: []plugins.ChatMessage{
			{Role: plugins.RoleUser, Content: "read main.go"},
			{Role: plugins.RoleAssistant, ToolCalls: []plugins.ToolCall{call}},
			{Role: plugins.RoleTool, ToolCallID: "call_1", Content: "package main"},
		},
		Tools: []plugins.ToolSpec{{Name: "read", Description: "read a file", Schema: []byte(`{"type":"object"}`)}}}
	if diff := cmp.Diff(wantSecond, chats[1]); diff != "" {
		t.Errorf("second chat mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plugintest.LogLine{{Level: "debug", Message: "tool round done"}}, host.Logs()); diff != "" {
		t.Errorf("logs mismatch (-want +got):\n%s", diff)
	}

	// With no replies left the fake host has no model, like an unconfigured host.
	resp, err = agent.Handle(context.Background(), host, plugins.AgentRequest{Prompt: "again", Task: &plugins.TaskRef{Number: 1}})
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	if resp.Error != plugins.ErrNoModel.Error() {
		t.Errorf("Handle without a model: Error = %q, want %q", resp.Error, plugins.ErrNoModel)
	}
}

func TestAgentWithoutHost(t *testing.T) {
	agent := plugintest.ConnectAgent(t, planner{})
	_, err := agent.Handle(context.Background(), nil, plugins.AgentRequest{Prompt: "x", Task: &plugins.TaskRef{Number: 1}})
	if err == nil || !strings.Contains(err.Error(), "no host services") {
		t.Errorf("Handle(nil host) error = %v, want 'no host services'", err)
	}
}
