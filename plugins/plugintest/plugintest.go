// Package plugintest lets plugin authors test a hook or an agent in go test,
// without the weave binary: Connect serves it over a real in-process gRPC
// connection (the same code path a running plugin takes, host services
// included), and FakeHost stands in for the host, recording what the plugin
// asks of it and answering from a script.
//
//	func TestBlocksRmRf(t *testing.T) {
//		hook := plugintest.ConnectHook(t, myHook{})
//		d, err := hook.Handle(ctx, plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: "bash",
//			Args: map[string]any{"command": "rm -rf /"}})
//		...
//	}
package plugintest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/pluginhost"
)

// Connect serves cfg over a real gRPC connection in this process and returns
// the host's side of it, the connection the host's supervisor holds to a
// running plugin. Everything is torn down when the test ends.
func Connect(t testing.TB, cfg plugins.ServeConfig) *pluginhost.Conn {
	t.Helper()
	client, _ := goplugin.TestPluginGRPCConn(t, false, pluginhost.PluginSet(t.Name(), cfg))
	// Closing the client shuts the server down through go-plugin's
	// controller, as the host does with a real plugin; stopping the server
	// here as well would race with that.
	t.Cleanup(func() { _ = client.Close() })
	conn, err := pluginhost.Dispense(client)
	if err != nil {
		t.Fatalf("plugintest.Connect: %v", err)
	}
	return conn
}

// ConnectHook serves h and returns it as the host sees it.
func ConnectHook(t testing.TB, h plugins.Hook) plugins.Hook {
	t.Helper()
	return Connect(t, plugins.ServeConfig{Hook: h}).Hook()
}

// ConnectAgent serves a and returns it as the host sees it. Pass a FakeHost
// (or any plugins.Host) to its Handle to serve the plugin's host calls.
func ConnectAgent(t testing.TB, a plugins.Agent) plugins.Agent {
	t.Helper()
	return Connect(t, plugins.ServeConfig{Agent: a}).Agent()
}

// LogLine is one line a plugin logged through its Host.
type LogLine struct {
	Level   string
	Message string
}

// FakeHost is a plugins.Host for tests. It records every call; tools answer
// from OnTool scripts (an unscripted tool gets an IsError result saying so),
// Complete answers queued replies in order and then plugins.ErrNoModel, and
// the plans service works on the progress given to SetPlan. It is safe for
// concurrent use.
type FakeHost struct {
	mu      sync.Mutex
	tools   map[string]func(plugins.ToolCall) (plugins.ToolResult, error)
	replies []plugins.ChatResponse
	plan    plugins.PlanProgress

	toolCalls []plugins.ToolCall
	chats     []plugins.ChatRequest
	logs      []LogLine
	ticks     []plugins.TaskRef
}

// NewFakeHost returns a FakeHost with no scripts.
func NewFakeHost() *FakeHost {
	return &FakeHost{tools: make(map[string]func(plugins.ToolCall) (plugins.ToolResult, error))}
}

// OnTool answers every call of tool with result.
func (h *FakeHost) OnTool(tool string, result plugins.ToolResult) {
	h.OnToolFunc(tool, func(plugins.ToolCall) (plugins.ToolResult, error) { return result, nil })
}

// OnToolFunc answers calls of tool with f.
func (h *FakeHost) OnToolFunc(tool string, f func(plugins.ToolCall) (plugins.ToolResult, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tools[tool] = f
}

// QueueReply adds a model reply; Complete answers them in order.
func (h *FakeHost) QueueReply(r plugins.ChatResponse) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.replies = append(h.replies, r)
}

// SetPlan sets the plan the plans service reports and ticks.
func (h *FakeHost) SetPlan(p plugins.PlanProgress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.plan = p
	h.plan.Tasks = slices.Clone(p.Tasks)
}

// ToolCalls returns the tool calls made so far.
func (h *FakeHost) ToolCalls() []plugins.ToolCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.toolCalls)
}

// ChatRequests returns the chats sent to the model so far.
func (h *FakeHost) ChatRequests() []plugins.ChatRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.chats)
}

// Logs returns the lines logged so far.
func (h *FakeHost) Logs() []LogLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.logs)
}

// Ticks returns the tasks ticked so far.
func (h *FakeHost) Ticks() []plugins.TaskRef {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ticks)
}

// CallTool implements plugins.Host.
func (h *FakeHost) CallTool(_ context.Context, call plugins.ToolCall) (plugins.ToolResult, error) {
	h.mu.Lock()
	h.toolCalls = append(h.toolCalls, call)
	f := h.tools[call.Tool]
	h.mu.Unlock()
	if f == nil {
		return plugins.ToolResult{IsError: true, Output: fmt.Sprintf("fake host: no answer scripted for tool %q (use OnTool)", call.Tool)}, nil
	}
	return f(call)
}

// Log implements plugins.Host.
func (h *FakeHost) Log(_ context.Context, level, msg string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, LogLine{Level: level, Message: msg})
	return nil
}

// Complete implements plugins.Host.
func (h *FakeHost) Complete(_ context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chats = append(h.chats, req)
	if len(h.replies) == 0 {
		return plugins.ChatResponse{}, plugins.ErrNoModel
	}
	r := h.replies[0]
	h.replies = h.replies[1:]
	return r, nil
}

// Progress implements plugins.Host.
func (h *FakeHost) Progress(_ context.Context, plan string) (plugins.PlanProgress, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.checkPlan(plan); err != nil {
		return plugins.PlanProgress{}, err
	}
	return h.progress(), nil
}

// TickTask implements plugins.Host: it marks the task with the same number
// (or, without a number, the same title) done.
func (h *FakeHost) TickTask(_ context.Context, plan string, task plugins.TaskRef) (plugins.PlanProgress, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.checkPlan(plan); err != nil {
		return plugins.PlanProgress{}, err
	}
	for i, t := range h.plan.Tasks {
		if (task.Number != 0 && t.Number == task.Number) || (task.Number == 0 && strings.EqualFold(t.Title, task.Title)) {
			if !t.Done {
				h.plan.Tasks[i].Done = true
				h.plan.Done++
			}
			h.ticks = append(h.ticks, task)
			return h.progress(), nil
		}
	}
	return plugins.PlanProgress{}, fmt.Errorf("fake host: plan %q has no task %d %q", h.plan.Plan, task.Number, task.Title)
}

func (h *FakeHost) checkPlan(plan string) error {
	if plan != "" && plan != h.plan.Plan {
		return fmt.Errorf("fake host: no plan %q (have %q)", plan, h.plan.Plan)
	}
	return nil
}

func (h *FakeHost) progress() plugins.PlanProgress {
	p := h.plan
	p.Tasks = slices.Clone(h.plan.Tasks)
	return p
}

var _ plugins.Host = (*FakeHost)(nil)
