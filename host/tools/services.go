package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/weavehq/weave/plugins"
)

// PluginServices is a plugins.Host assembled from the host's parts: the host
// builds one per agent call (carrying that agent's capability row in
// ToolFunc, typically) and passes it to the agent's Handle; the supervisor
// routes the plugin's host-service requests for that call to it. A part left
// nil answers with an error that says what is missing; with no ModelFunc,
// Complete answers plugins.ErrNoModel.
type Services struct {
	// Logger receives Log calls; nil means slog.Default(). Give it the
	// plugin's name (Logger.With("plugin", name)) to log under it.
	Logger *slog.Logger
	// ToolFunc runs a tool through the capability gate and the tool hooks.
	ToolFunc func(ctx context.Context, call plugins.ToolCall) (plugins.ToolResult, error)
	// ModelFunc completes a chat with the configured model.
	ModelFunc func(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error)
	// ProgressFunc and TickFunc read and tick plans.
	ProgressFunc func(ctx context.Context, plan string) (plugins.PlanProgress, error)
	TickFunc     func(ctx context.Context, plan string, task plugins.TaskRef) (plugins.PlanProgress, error)
}

var errNoPlans = errors.New("no plan is open in this session: start one with weave start-work")

// CallTool implements plugins.Host.
func (h *Services) CallTool(ctx context.Context, call plugins.ToolCall) (plugins.ToolResult, error) {
	if h.ToolFunc == nil {
		// A refusal the agent can read, not a transport failure.
		return plugins.ToolResult{IsError: true, Denied: true,
			Output: fmt.Sprintf("tool %s is not available: this call was given no tools", call.Tool)}, nil
	}
	return h.ToolFunc(ctx, call)
}

// Complete implements plugins.Host.
func (h *Services) Complete(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
	if h.ModelFunc == nil {
		return plugins.ChatResponse{}, plugins.ErrNoModel
	}
	return h.ModelFunc(ctx, req)
}

// Progress implements plugins.Host.
func (h *Services) Progress(ctx context.Context, plan string) (plugins.PlanProgress, error) {
	if h.ProgressFunc == nil {
		return plugins.PlanProgress{}, errNoPlans
	}
	return h.ProgressFunc(ctx, plan)
}

// TickTask implements plugins.Host.
func (h *Services) TickTask(ctx context.Context, plan string, task plugins.TaskRef) (plugins.PlanProgress, error) {
	if h.TickFunc == nil {
		return plugins.PlanProgress{}, errNoPlans
	}
	return h.TickFunc(ctx, plan, task)
}

// Log implements plugins.Host. Unknown levels log at info.
func (h *Services) Log(ctx context.Context, level, msg string) error {
	logger := h.Logger
	if logger == nil {
		logger = slog.Default()
	}
	lvl := slog.LevelInfo
	switch level {
	case "trace":
		lvl = slog.LevelDebug - 4
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	}
	logger.Log(ctx, lvl, msg)
	return nil
}

var _ plugins.Host = (*Services)(nil)
