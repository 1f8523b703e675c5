package hooks

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// WorkContinuationID names the work-continuation hook.
const WorkContinuationID = "weave.work-continuation"

// StartWorkRunKey is the session.idle data key a start-work run sets
// (true): the person asked for the plan to be run, so the hook nudges there
// even when work_continuation.enabled is off.
const StartWorkRunKey = "start_work"

// DefaultMaxNudges is how many continuation prompts without progress pause a
// plan.
const DefaultMaxNudges = 3

// WorkContinuation nudges the agent that owns the active plan when its
// session goes idle with tasks left. It never loops:
//
//   - only a session listed in state.json's session_ids is nudged, and only
//     while the plan is active, incomplete and not paused;
//   - a user message (chat.message not sent by the host) or an interrupt
//     (session.idle with data "interrupted": true) stops the nudges;
//   - after MaxNudges nudges without a task being completed it stops too;
//     the count starts from state.json's continuation (the run records
//     every nudge there), so a restart does not reset it, and a
//     continuation stopped there (a person's message) sends no nudge.
//
// A nudge is an Allow whose Context is the continuation prompt. Stopping is
// signalled once, as a Block on session.idle whose reason says why; the host
// then records the plan as paused. `start-work` in the session re-arms it.
type WorkContinuation struct {
	src       PlanSource
	project   string
	maxNudges int
	// always is work_continuation.enabled: nudge in every session, not
	// only in start-work runs.
	always   bool
	mu       sync.Mutex
	sessions map[string]*continuationState
}

type continuationState struct {
	// count is the nudges without progress, seeded from state.json the
	// first time the session goes idle, so that a restart does not reset it.
	count plans.Continuation
	seen  bool
	// stopped is why nudging stopped ("" while active); signalled says the
	// host has been told.
	stopped   string
	signalled bool
}

// NewWorkContinuation returns the hook, on in every session; project is
// used when an event has no cwd; maxNudges zero means DefaultMaxNudges.
func NewWorkContinuation(src PlanSource, project string, maxNudges int) *WorkContinuation {
	return newWorkContinuation(src, project, maxNudges, true)
}

func newWorkContinuation(src PlanSource, project string, maxNudges int, always bool) *WorkContinuation {
	if maxNudges <= 0 {
		maxNudges = DefaultMaxNudges
	}
	return &WorkContinuation{src: src, project: project, maxNudges: maxNudges, always: always, sessions: make(map[string]*continuationState)}
}

func (h *WorkContinuation) info() plugins.Info {
	return builtinInfo(WorkContinuationID, PriorityContext,
		plugins.EventSessionIdle, plugins.EventChatMessage, plugins.EventCommandExecuteBefore, plugins.EventSessionEnd)
}

func (h *WorkContinuation) registered() Registered {
	return builtinRegistered(h, h.info(), FailDefault)
}

// Info describes the hook.
func (h *WorkContinuation) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

func (h *WorkContinuation) session(id string) *continuationState {
	s := h.sessions[id]
	if s == nil {
		s = &continuationState{}
		h.sessions[id] = s
	}
	return s
}

// Handle tracks the session and decides on idle.
func (h *WorkContinuation) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch ev.Name {
	case plugins.EventSessionEnd:
		delete(h.sessions, ev.SessionID)
		return allow, nil
	case plugins.EventCommandExecuteBefore:
		if ev.Command == CommandStartWork {
			delete(h.sessions, ev.SessionID)
		}
		return allow, nil
	case plugins.EventChatMessage:
		if fromUser(ev) {
			if s := h.session(ev.SessionID); s.stopped == "" {
				s.stopped = "the user sent a message"
			}
		}
		return allow, nil
	case plugins.EventSessionIdle:
	default:
		return allow, nil
	}

	if run, _ := ev.Data[StartWorkRunKey].(bool); !run && !h.always {
		return allow, nil
	}
	s := h.session(ev.SessionID)
	if interrupted, _ := ev.Data["interrupted"].(bool); interrupted && s.stopped == "" {
		s.stopped = "the user interrupted"
	}
	project, err := projectDir(ev, h.project)
	if err != nil {
		return plugins.Decision{}, err
	}
	state, err := h.src.State(ctx, project)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("read work state: %w", err)
	}
	if state.ActivePlan == "" || state.Paused || !slices.Contains(state.SessionIDs, ev.SessionID) {
		return allow, nil
	}
	plan, err := h.src.Plan(ctx, state.ActivePlan)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("read active plan: %w", err)
	}
	if plan.Complete() || plan.Total == 0 {
		return allow, nil
	}
	if s.stopped == "" && state.Continuation.Stopped != "" {
		s.stopped = state.Continuation.Stopped
	}
	if s.stopped == "" {
		if !s.seen {
			s.count, s.seen = state.Continuation, true
		}
		if s.count.Stale(plan.Completed) >= h.maxNudges {
			s.stopped = fmt.Sprintf("%d continuation prompts without progress", h.maxNudges)
		}
	}
	if s.stopped != "" {
		if s.signalled {
			return allow, nil
		}
		s.signalled = true
		return block(fmt.Sprintf("paused plan %s at %s tasks: %s; run `weave start-work` to resume", plan.Name, plan.progress(), s.stopped)), nil
	}
	s.count.Nudge(plan.Completed)
	return withContext(fmt.Sprintf("Active work: %s, %s tasks done. %s", plan.Name, plan.progress(), nextTask(plan.Next))), nil
}

var _ plugins.Hook = (*WorkContinuation)(nil)
