package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// Services is a plugins.Host assembled from the host's parts: the host
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

// Services returns the host services of one agent call: its tool calls pass
// this door as caller in session (under scope: a zero Scope adds nothing),
// its plans are read and ticked through the same door (a tick is a
// plan_check call, so the gate and the tool hooks see it), and its chats go
// to the model service.
func (t *Tools) Services(caller Caller, session string, scope Scope, logger *slog.Logger) *Services {
	if logger == nil {
		logger = t.log
	}
	toolFunc := func(ctx context.Context, call plugins.ToolCall) (plugins.ToolResult, error) {
		if scope.Output != nil && call.Tool == plugins.ToolBash {
			if cmd, ok := call.Args[argCommand].(string); ok {
				fmt.Fprintf(scope.Output, "$ %s\n", commandLine(cmd))
			}
		}
		if scope.Output != nil || scope.TimeoutSet || scope.Handed != nil {
			ctx = WithScope(ctx, scope)
		}
		return t.Call(ctx, caller, session, call)
	}
	var modelFunc func(context.Context, plugins.ChatRequest) (plugins.ChatResponse, error)
	if t.model != nil {
		modelFunc = t.model(session, caller.Role())
		if with := t.modelCtx; with != nil {
			complete := modelFunc
			modelFunc = func(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
				return complete(with(ctx), req)
			}
		}
	}
	return &Services{
		Logger:    logger,
		ToolFunc:  toolFunc,
		ModelFunc: modelFunc,
		ProgressFunc: func(_ context.Context, plan string) (plugins.PlanProgress, error) {
			return t.Progress(plan)
		},
		TickFunc: func(ctx context.Context, plan string, task plugins.TaskRef) (plugins.PlanProgress, error) {
			ref := any(task.Title)
			if task.Number > 0 {
				ref = task.Number
			}
			res, err := toolFunc(ctx, plugins.ToolCall{Tool: plugins.ToolPlanCheck, Args: map[string]any{argPlan: plan, argTask: ref}})
			if err != nil {
				return plugins.PlanProgress{}, err
			}
			if res.IsError {
				return plugins.PlanProgress{}, errors.New(res.Output)
			}
			return t.Progress(plan)
		},
	}
}

// commandLine shows a command by its first line.
func commandLine(code string) string {
	code = strings.TrimSpace(code)
	if i := strings.IndexByte(code, '\n'); i >= 0 {
		return code[:i] + " …"
	}
	return code
}

type messageSourceKey struct{}

// WithMessageSource marks the model calls made with ctx: their user
// messages come from source (a start-work run's prompts, a continuation
// prompt), not from the person, and chat.message hooks see it as the
// event's data "source".
func WithMessageSource(ctx context.Context, source string) context.Context {
	return context.WithValue(ctx, messageSourceKey{}, source)
}

// SourceDelegation marks the model calls of a delegated agent: its user
// messages are the delegating model's prompt.
const SourceDelegation = "delegation"

// MessageSource is the source WithMessageSource gave ctx; "user" when none.
func MessageSource(ctx context.Context) string {
	if s, ok := ctx.Value(messageSourceKey{}).(string); ok && s != "" {
		return s
	}
	return "user"
}
