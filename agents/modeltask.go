package agents

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// modelTaskHost is the host as Tapestry's model sees it while it carries out
// a model task: every call goes through to the host, except that a
// plan_check ticking a task with verify blocks first runs them (through the
// host's bash tool, so the gate and the hooks see them); a tick whose
// verify block fails is refused, and the tool result tells the model why so
// that it can fix the cause and tick again. It also notes that the host has
// no model, which makes the task a runbook or a person's.
type modelTaskHost struct {
	plugins.Host
	// name and path are the plan's.
	name, path string

	noModel bool
}

func (h *modelTaskHost) Complete(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
	resp, err := h.Host.Complete(ctx, req)
	if errors.Is(err, plugins.ErrNoModel) {
		h.noModel = true
	}
	return resp, err
}

func (h *modelTaskHost) CallTool(ctx context.Context, call plugins.ToolCall) (plugins.ToolResult, error) {
	if call.Tool != plugins.ToolPlanCheck {
		return h.Host.CallTool(ctx, call)
	}
	t, ok, err := h.target(call.Args)
	if err != nil {
		// The gate fails closed: no tick without its verify blocks.
		return plugins.ToolResult{IsError: true, Output: "The tick was refused: " + err.Error()}, nil
	}
	if !ok || t.Done {
		return h.Host.CallTool(ctx, call)
	}
	for _, b := range t.VerifyBlocks() {
		res, err := h.Host.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolBash, Args: map[string]any{
			"command": b.Code, "shell": b.Shell(), "errexit": true,
		}})
		if err != nil {
			return res, err
		}
		if res.Denied {
			return plugins.ToolResult{IsError: true, Output: fmt.Sprintf(
				"The tick was refused: the verify block at line %d of the plan was not allowed to run: %s", b.Line, res.Output)}, nil
		}
		if res.IsError || res.ExitCode != 0 {
			return plugins.ToolResult{IsError: true, ExitCode: res.ExitCode, Output: fmt.Sprintf(
				"The tick was refused: the verify block at line %d of the plan failed (exit code %d). It runs:\n%s\nIts output:\n%s\nFix the cause, then call plan_check again.",
				b.Line, res.ExitCode, strings.TrimRight(b.Code, "\n"), strings.TrimRight(res.Output, "\n"))}, nil
		}
	}
	return h.Host.CallTool(ctx, call)
}

// target is the task of this task's plan that a plan_check call ticks, when
// it names one: by number, by its whole title, or by a part of the title
// that only one task has, as plan_check reads it.
func (h *modelTaskHost) target(args map[string]any) (plans.Task, bool, error) {
	if name, _ := args["plan"].(string); name != "" && !strings.EqualFold(strings.TrimSuffix(name, ".md"), h.name) {
		return plans.Task{}, false, nil
	}
	// A fresh read: the calls of one turn may run at once.
	p, err := plans.Load(h.path)
	if err != nil {
		return plans.Task{}, false, fmt.Errorf("read the plan: %w", err)
	}
	var n int
	switch v := args["task"].(type) {
	case float64:
		n = int(v)
	case int:
		n = v
	case int64:
		n = int(v)
	case string:
		if i, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			n = i
			break
		}
		t, _, ok := p.FindTitle(v)
		return t, ok, nil
	default:
		return plans.Task{}, false, nil
	}
	for _, t := range p.Tasks {
		if t.Number == n && n > 0 {
			return t, true, nil
		}
	}
	return plans.Task{}, false, nil
}
