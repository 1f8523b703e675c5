package run

import (
	"context"
	"sync"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// A run fires session.start before its first task and session.end after its
// last; a local worker's tasks run between the two. A worker process runs
// the tasks a coordinator hands it between the same two events, fired by
// its own hooks: its share of the run's session opens with the first task
// of that session it runs and ends once it runs none, so a session's start
// and end never overlap on one worker and the built-in hooks forget a
// session (session.end) only when none of its tasks is left to need what
// they keep. The plan's own events (plan.task.done once a task is ticked,
// plan.todos.done) belong to the coordinator, which alone ticks: they
// never fire here.

// Reasons a handed task's session.end gives (data.reason).
const (
	handedDone    = "done"
	handedFailed  = "failed"
	handedStopped = "stopped"
)

// handedSessions are the sessions of which a worker runs tasks.
type handedSessions struct {
	// mu is held while a session's start or end hooks run, so that a
	// task of a session ending waits for its end and starts it anew.
	mu   sync.Mutex
	open map[string]*handedSession
}

// handedSession is one session a worker runs tasks of.
type handedSession struct {
	// tasks counts the tasks of it running here.
	tasks int
	// forModel is what its session.start hooks said for the model: it
	// goes with the first prompt of each of its tasks.
	forModel []string
}

// begin enters t into its session on this worker, firing session.start
// when no other task of it runs here, and returns what the hooks said for
// the model. An error is a hook whose failure policy is closed that
// failed (Halted): the task must not run. Every begin is followed by end.
func (h *HandedHost) begin(ctx context.Context, t HandedTask) ([]string, error) {
	h.sessions.mu.Lock()
	defer h.sessions.mu.Unlock()
	if h.sessions.open == nil {
		h.sessions.open = map[string]*handedSession{}
	}
	id := t.Assignment.Session
	s := h.sessions.open[id]
	if s == nil {
		s = &handedSession{}
		h.sessions.open[id] = s
		// What SessionStart hooks add goes with the model's first prompt,
		// as in a run; a block is not theirs to give (as in a run).
		s.forModel = h.fire(ctx, t, plugins.Event{Name: plugins.EventSessionStart}).Context
	}
	s.tasks++
	if h.Halted != nil {
		if err := h.Halted(); err != nil {
			return nil, err
		}
	}
	return s.forModel, nil
}

// end takes t out of its session on this worker, firing session.end with
// reason when it was the last of it here.
func (h *HandedHost) end(ctx context.Context, t HandedTask, reason string) {
	h.sessions.mu.Lock()
	defer h.sessions.mu.Unlock()
	id := t.Assignment.Session
	s := h.sessions.open[id]
	if s == nil {
		return
	}
	if s.tasks--; s.tasks > 0 {
		return
	}
	delete(h.sessions.open, id)
	h.fire(ctx, t, plugins.Event{Name: plugins.EventSessionEnd, Data: map[string]any{"reason": reason}})
}

// fire runs the worker's hooks on ev of task t's session, as a run fires
// its own (runner.fire): a hook's failure is logged; one whose failure
// policy is closed is recorded by the pipeline, which Halted then says.
func (h *HandedHost) fire(ctx context.Context, t HandedTask, ev plugins.Event) hooks.Outcome {
	if h.Hooks == nil {
		return hooks.Outcome{Action: plugins.Allow}
	}
	a := t.Assignment
	ev.SessionID, ev.Agent, ev.Cwd, ev.Time = a.Session, agents.Tapestry, t.Dir, time.Now()
	ev.Plan, ev.Task = a.Plan.Name, &plugins.TaskRef{Number: a.Task.Number, Title: a.Task.Title}
	out, err := h.Hooks.Run(ctx, ev)
	if h.Logger == nil {
		return out
	}
	if err != nil {
		h.Logger.Warn("hooks failed", "event", ev.Name, "err", err)
	}
	for _, rep := range out.Reports {
		if rep.Error != "" {
			h.Logger.Warn("hook failed", "event", ev.Name, "hook", rep.Hook, "err", rep.Error, "policy", rep.Policy)
		}
	}
	return out
}

// endReason is how a task that ended with err ends its session.
func endReason(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return handedDone
	case ctx.Err() != nil:
		return handedStopped
	}
	return handedFailed
}
