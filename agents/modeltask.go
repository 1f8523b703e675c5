package agents

import (
	"context"
	"errors"

	"github.com/weavehq/weave/plugins"
)

// modelTaskHost is the host as Tapestry's model sees it while it carries out
// a model task: every call goes through to the host as it is. A plan_check
// is the host's tick door, which runs the task's verify blocks (through its
// bash tool, so the gate and the hooks see them) and refuses a tick whose
// block fails, telling the model why; they run there and nowhere else, once
// per plan_check. It also notes that the host has no model, which makes the
// task a runbook or a person's.
type modelTaskHost struct {
	plugins.Host

	noModel bool
}

func (h *modelTaskHost) Complete(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
	resp, err := h.Host.Complete(ctx, req)
	if errors.Is(err, plugins.ErrNoModel) {
		h.noModel = true
	}
	return resp, err
}
