package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// Where the user messages of a run's conversation come from, as chat.message
// hooks see them (data "source"): none of them is the person's.
const (
	// SourceStartWork marks the prompt that hands Tapestry a task.
	SourceStartWork = "start-work"
	// SourceContinuation marks a continuation prompt (a nudge).
	SourceContinuation = "continuation"
)

// converse has the agent carry out task t, as one conversation: the task's
// prompt continues the conversation the agent had in this run (or in the
// session this run resumes), and when the agent ends its turn with the task
// not ticked, its session is idle: the work-continuation hook may nudge it,
// and its prompt becomes the next user message of the same conversation;
// each nudge is recorded in state.json. It returns nil once the task is
// done and ticked.
func (r *runner) converse(ctx context.Context, p *plans.Plan, t plans.Task, out io.Writer) error {
	// The task is handed over with the blocks it had when the run started:
	// a block edited during the run (a runbook's verify block weakened by
	// the model of an earlier task) is not what runs.
	t, _ = r.tools.AsStarted(ctx, p, t)
	role, agent := r.taskAgent(t)
	if agents.RunsAsRunbook(t) {
		// A runbook task needs no model and no conversation: the runbook
		// executor runs it here, as the role, through the same door as the
		// agent's plugin would (each block a bash call through the gate
		// and the hooks, the tick a plan_check), without three calls to
		// and from another process for every task.
		resp, err := agents.RunTask(ctx, r.services(role, out, &tools.Handed{Plan: p.Name, Task: t, Runbook: true}), p.Name, t)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", role, err)
		case resp.Error != "":
			return agents.ResponseError(resp)
		}
		return nil
	}
	req := agents.TaskRequest(r.session, p, t)
	source := SourceStartWork
	for nudges := 0; ; nudges++ {
		if role == agents.Tapestry {
			req.History = r.history(ctx)
		}
		if len(r.forModel) > 0 {
			// What hooks said for the model since its last message (the
			// verification reminder) goes with its next one.
			req.Prompt += "\n\n<system-reminder>\n" + strings.Join(r.forModel, "\n\n") + "\n</system-reminder>"
			r.forModel = nil
		}
		resp, err := agent.Handle(ctx, r.servicesFrom(role, out, source, &tools.Handed{Plan: p.Name, Task: t}), req)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", role, err)
		case resp.Error != "":
			return agents.ResponseError(resp)
		case resp.Done && r.ticked(p, t):
			return nil
		}
		// The agent ended its turn with the task unfinished (or said done
		// without ticking it: the host confirms ticks): its session is idle.
		// The work-continuation hook may nudge it on, or pause the plan.
		pr := r.progress(p)
		ev := plugins.Event{Name: plugins.EventSessionIdle, Plan: p.Name, Task: &plugins.TaskRef{Number: t.Number, Title: t.Title},
			Data: map[string]any{hooks.StartWorkRunKey: true, "completed": pr.Completed, "total": pr.Total}}
		o := r.fire(ctx, ev)
		switch {
		case o.Blocked():
			if r.st.Continuation == nil || r.st.Continuation.Stopped == "" {
				r.st.StopContinuation(o.Reason)
			}
			return &pauseError{reason: o.Reason}
		case len(o.Context) > 0 && nudges < maxIdleNudges:
			r.st.Nudged(pr.Completed)
			if err := r.save(); err != nil {
				return err
			}
			req.Prompt, source = strings.Join(o.Context, "\n\n"), SourceContinuation
			continue
		}
		if resp.Done {
			return errors.New("tapestry reported the task done but did not tick it")
		}
		return errors.New("tapestry stopped without finishing the task")
	}
}

// history is Tapestry's conversation so far: in this run's session, else,
// for a resumed plan, in the session it resumes.
func (r *runner) history(ctx context.Context) []plugins.ChatMessage {
	if r.o.History == nil {
		return nil
	}
	for _, s := range []string{r.session, r.resumes} {
		if s == "" {
			continue
		}
		h, err := r.o.History(ctx, s, agents.Tapestry)
		if err != nil {
			r.o.Logger.Warn("read the conversation to continue", "session", s, "err", err)
			continue
		}
		if len(h) > 0 {
			return h
		}
	}
	return nil
}

// ticked reports whether task t is ticked in the plan file now, through
// the tick door.
func (r *runner) ticked(p *plans.Plan, t plans.Task) bool {
	np, err := r.current(p)
	if err != nil {
		return false
	}
	cur, ok := np.Lookup(t)
	return ok && cur.Done
}

// progress is the plan's progress as the file now says, through the door.
func (r *runner) progress(p *plans.Plan) plans.Progress {
	if np, err := r.current(p); err == nil {
		return np.Progress()
	}
	return p.Progress()
}

// servicesFrom is services whose model calls mark their user messages as
// the run's (source), never the person's.
func (r *runner) servicesFrom(role string, out io.Writer, source string, handed *tools.Handed) *tools.Services {
	s := r.services(role, out, handed)
	if complete := s.ModelFunc; complete != nil {
		s.ModelFunc = func(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
			return complete(tools.WithMessageSource(ctx, source), req)
		}
	}
	return s
}
