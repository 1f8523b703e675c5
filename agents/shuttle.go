package agents

import (
	"context"
	"fmt"
	"strings"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// ShuttleAgent is the Shuttle of a category (shuttle-<category>): a model
// agent that also carries out the plan tasks tagged with its category.
// A task with work blocks runs as a runbook, as Tapestry runs it; any
// other task is done by the model with the Shuttle's tools, and the task's
// verify blocks, if it has any, must pass before it is ticked. A request
// that names no task (Loom delegating) is an ordinary model request.
type ShuttleAgent struct {
	Model ModelAgent
}

// Info describes the Shuttle as an agent plugin.
func (a ShuttleAgent) Info(ctx context.Context) (plugins.Info, error) { return a.Model.Info(ctx) }

// Handle carries out req's task, or answers req.Prompt.
func (a ShuttleAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	if req.Plan == "" || req.Task == nil {
		return a.Model.Handle(ctx, h, req)
	}
	p, err := plans.Load(req.Plan)
	if err != nil {
		return plugins.AgentResponse{Error: fmt.Sprintf("read the plan: %v", err)}, nil
	}
	t, ok := p.Lookup(plans.Task{Number: req.Task.Number, Title: req.Task.Title})
	if !ok {
		return plugins.AgentResponse{Error: fmt.Sprintf("task %s is not in %s", plans.TaskLabel(req.Task.Number, req.Task.Title), req.Plan)}, nil
	}
	scripts, _ := RunbookScripts(t)
	var verify []Script
	work := false
	for _, s := range scripts {
		if s.Verify {
			verify = append(verify, s)
		} else {
			work = true
		}
	}
	payload := TaskPayload{Plan: p.Name, Number: t.Number, Title: t.Title, Scripts: scripts}
	if work {
		return RunRunbook(ctx, h, payload)
	}
	task := req
	task.Prompt = TaskPrompt(p, t, len(verify) > 0)
	resp, err := a.Model.Handle(ctx, h, task)
	if err != nil || resp.Error != "" || len(verify) == 0 {
		return resp, err
	}
	payload.Scripts = verify
	vr, err := RunRunbook(ctx, h, payload)
	if err != nil || vr.Error != "" {
		return vr, err
	}
	return resp, nil
}

// TaskPrompt asks a model to carry out task t of plan p: the task as the
// plan writes it, and what finishing means.
func TaskPrompt(p *plans.Plan, t plans.Task, hasVerify bool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Carry out task %s of the plan %s (%s).\n\n", t.Label(), p.Name, p.Path)
	if t.Start >= 0 && t.End <= len(p.Src) && t.Start < t.End {
		fmt.Fprintf(&sb, "The task as the plan writes it:\n\n%s\n\n", strings.TrimRight(string(p.Src[t.Start:t.End]), "\n"))
	}
	sb.WriteString("Do the work with your tools, check it against the task's Acceptance, and answer with what you changed and how you checked it.")
	if hasVerify {
		sb.WriteString(" The task's `sh verify` blocks run when you answer; the task is ticked only when they pass.")
	}
	return sb.String()
}

var _ plugins.Agent = ShuttleAgent{}
