package envelope

import (
	"fmt"
	"strings"
)

// Work is a message action a receiver runs as a task.
type Work struct {
	GroupID   string
	Submitter string
	Action    Action
	TaskID    string
	Context   *Context
	// MayRelay is the loop guard's verdict: false for a reply, whose task
	// must not relay onward (see MayRelay).
	MayRelay bool
}

// Receiver applies the receiving side of action.submit for one agent: which
// actions are its own, what each control command answers, and the queue of
// messages waiting for the running task. It runs no goroutines and keeps no
// timers: queued messages start only when the running task finishes or is
// interrupted. It is not safe for concurrent use.
//
// A message starts a task (accepted) when the agent is idle and waits
// (queued) while a task runs; the task's message completes on Finish.
// interrupt completes when it stopped a task (the task's message ends with
// error) and is rejected when none ran. compact and review answer blocked
// while a task runs and completed when idle; new does the same and, when
// idle, reports new_context_id and new_task_id. Commands are matched case
// insensitively, new_session means new, and unknown commands get no result.
type Receiver struct {
	ID, Name string
	newID    func() string
	current  *Work
	queue    []Work
}

// NewReceiver returns a receiver for agent id with display name name.
// newID makes context and task ids (nil: NewID).
func NewReceiver(id, name string, newID func() string) *Receiver {
	if newID == nil {
		newID = NewID
	}
	return &Receiver{ID: id, Name: name, newID: newID}
}

// Current returns the running task, or nil when idle.
func (r *Receiver) Current() *Work { return r.current }

// Queued returns how many messages wait for the running task.
func (r *Receiver) Queued() int { return len(r.queue) }

func (r *Receiver) mine(dst string) bool {
	return dst == r.ID || (r.Name != "" && dst == r.Name)
}

// Receive applies one delivered envelope and returns the results to send
// back. Envelopes that are not action.submit, that come from the agent
// itself, or whose actions target others yield nothing.
func (r *Receiver) Receive(env Envelope) ([]Result, error) {
	if env.Type != TypeActionSubmit || env.Src == r.ID {
		return nil, nil
	}
	var p Submit
	if err := env.Decode(&p); err != nil {
		return nil, err
	}
	var out []Result
	for _, a := range p.Actions {
		if !r.mine(a.Dst) {
			continue
		}
		res := func(status, detail string, data *ResultData) {
			out = append(out, Result{GroupID: p.GroupID, ActionID: a.ActionID, ActionIndex: IntPtr(a.Index()),
				Status: status, Detail: detail, Data: data})
		}
		switch a.Type {
		case ActionMessage:
			w := Work{GroupID: p.GroupID, Submitter: env.Src, Action: a, TaskID: p.TaskID, Context: p.Context,
				MayRelay: MayRelay(a.Kind)}
			if r.current != nil {
				r.queue = append(r.queue, w)
				res(ResultQueued, fmt.Sprintf("waiting for task %s", r.current.Action.ActionID), nil)
				continue
			}
			r.start(w)
			res(ResultAccepted, "", nil)
		case ActionControl:
			switch normalizeCommand(a.Command) {
			case CommandInterrupt:
				if r.current == nil {
					res(ResultRejected, "no task was running", nil)
					continue
				}
				stopped := *r.current
				out = append(out, resultFor(stopped, ResultError, "interrupted"))
				r.current = nil
				res(ResultCompleted, "interrupted "+stopped.Action.ActionID, nil)
				out = append(out, r.next()...)
			case CommandCompact, CommandReview:
				if r.current != nil {
					res(ResultBlocked, "a task is running", nil)
					continue
				}
				res(ResultCompleted, "", nil)
			case CommandNew:
				if r.current != nil {
					res(ResultBlocked, "a task is running", nil)
					continue
				}
				res(ResultCompleted, "", &ResultData{NewContextID: r.newID(), NewTaskID: r.newID()})
			}
		}
	}
	return out, nil
}

// Finish ends the running task: its message completes and the next queued
// message starts. It returns the results to send.
func (r *Receiver) Finish(detail string) []Result {
	if r.current == nil {
		return nil
	}
	out := []Result{resultFor(*r.current, ResultCompleted, detail)}
	r.current = nil
	return append(out, r.next()...)
}

func (r *Receiver) start(w Work) {
	if w.TaskID == "" {
		w.TaskID = r.newID()
	}
	r.current = &w
}

// next starts the first queued message, if any.
func (r *Receiver) next() []Result {
	if r.current != nil || len(r.queue) == 0 {
		return nil
	}
	w := r.queue[0]
	r.queue = r.queue[1:]
	r.start(w)
	return []Result{resultFor(w, ResultAccepted, "")}
}

func resultFor(w Work, status, detail string) Result {
	return Result{GroupID: w.GroupID, ActionID: w.Action.ActionID, ActionIndex: IntPtr(w.Action.Index()),
		Status: status, Detail: detail}
}

// normalizeCommand matches control commands as receivers do.
func normalizeCommand(c string) string {
	c = strings.ToLower(strings.TrimSpace(c))
	if c == "new_session" {
		return CommandNew
	}
	return c
}
