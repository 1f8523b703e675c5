package tools

import (
	"context"
	"fmt"
	"sync"
)

// slots bounds how many tool calls of one session run at once
// (tools.max_parallel). The bound lives in the host's door, not in the
// agent: an agent (a plugin process the host does not trust) may send as
// many calls at once as it likes, and the door queues those over the bound
// in the order they arrive, first come first served.
type slots struct {
	max int

	mu       sync.Mutex
	sessions map[string]*sessionSlots
}

// sessionSlots is one session's share: running calls and those queued, in
// arrival order. It is dropped when none is left, so that the map holds only
// sessions with calls in flight.
type sessionSlots struct {
	running int
	queue   []chan struct{} // closed when the call may run
}

// heldSlotKey marks a context whose call already holds a slot of a session:
// a call made from inside it (the verify blocks a plan_check runs) is part
// of that call and takes no second slot, which with a bound of 1 would wait
// for itself.
type heldSlotKey struct{ session string }

func newSlots(max int) *slots {
	return &slots{max: max, sessions: map[string]*sessionSlots{}}
}

// acquire waits for a slot of session, in arrival order, and returns the
// context the call runs under and the function that frees the slot. It
// returns ctx's error if ctx ends first; the call then never ran.
func (s *slots) acquire(ctx context.Context, session string) (context.Context, func(), error) {
	key := heldSlotKey{session}
	if ctx.Value(key) != nil {
		return ctx, func() {}, nil
	}
	if err := ctx.Err(); err != nil {
		return ctx, nil, fmt.Errorf("waiting for a tool call slot: %w", err)
	}
	s.mu.Lock()
	ss := s.sessions[session]
	if ss == nil {
		ss = &sessionSlots{}
		s.sessions[session] = ss
	}
	if ss.running < s.max && len(ss.queue) == 0 {
		ss.running++
		s.mu.Unlock()
		return context.WithValue(ctx, key, true), func() { s.release(session) }, nil
	}
	ready := make(chan struct{})
	ss.queue = append(ss.queue, ready)
	s.mu.Unlock()

	select {
	case <-ready:
		return context.WithValue(ctx, key, true), func() { s.release(session) }, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	select {
	case <-ready:
		// The slot was handed over as ctx ended: pass it on.
		s.mu.Unlock()
		s.release(session)
	default:
		for i, c := range ss.queue {
			if c == ready {
				ss.queue = append(ss.queue[:i], ss.queue[i+1:]...)
				break
			}
		}
		s.dropIdle(session, ss)
		s.mu.Unlock()
	}
	return ctx, nil, fmt.Errorf("waiting for a tool call slot: %w", ctx.Err())
}

// release frees a slot of session: the first call queued runs next.
func (s *slots) release(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[session]
	if len(ss.queue) > 0 {
		// The slot passes to the first in line; running stays the same.
		close(ss.queue[0])
		ss.queue[0] = nil
		ss.queue = ss.queue[1:]
		return
	}
	ss.running--
	s.dropIdle(session, ss)
}

// dropIdle forgets a session with nothing running or queued. s.mu is held.
func (s *slots) dropIdle(session string, ss *sessionSlots) {
	if ss.running == 0 && len(ss.queue) == 0 {
		delete(s.sessions, session)
	}
}
