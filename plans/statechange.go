package plans

import (
	"time"
	"unicode/utf8"
)

// The changes a run makes to its work state, one method each, so that what
// a start, an attempt, a tick, a pause or a failure records is said once.

// NewState is the work state of a plan started afresh at now: path is the
// plan file (absolute), agent the executing agent, sha the git HEAD.
func NewState(path, name, agent, sha string, now time.Time) *State {
	return &State{
		SchemaVersion: SchemaVersion,
		ActivePlan:    path,
		StartedAt:     now.UTC(),
		PlanName:      name,
		Agent:         agent,
		StartSHA:      sha,
		Tasks:         map[string]*TaskRecord{},
	}
}

// maxSessions is how many of the latest sessions state.json remembers as
// owning the plan: what the work-continuation hook needs, and a bound on the
// file however often a plan is resumed.
const maxSessions = 8

// maxErrorBytes bounds an error kept in state.json; the task's log has it in
// full.
const maxErrorBytes = 1024

// Resume records that session (re)takes the plan: the plan is no longer
// paused.
func (s *State) Resume(session string) {
	if s.Tasks == nil {
		s.Tasks = map[string]*TaskRecord{}
	}
	s.SessionIDs = append(s.SessionIDs, session)
	if n := len(s.SessionIDs); n > maxSessions {
		s.SessionIDs = append([]string(nil), s.SessionIDs[n-maxSessions:]...)
	}
	s.Paused, s.PausedReason = false, ""
	// A start re-arms continuation that a person or its own bound stopped;
	// the nudges of a run that died or was interrupted still count.
	if s.Continuation != nil && s.Continuation.Stopped != "" {
		s.Continuation = nil
	}
}

// Nudged records a continuation prompt sent with completed tasks done.
func (s *State) Nudged(completed int) {
	if s.Continuation == nil {
		s.Continuation = &Continuation{}
	}
	s.Continuation.Nudge(completed)
}

// StopContinuation turns continuation off for the plan, saying why (a
// person's message); the next start re-arms it.
func (s *State) StopContinuation(reason string) {
	if s.Continuation == nil {
		s.Continuation = &Continuation{}
	}
	s.Continuation.Stopped = reason
}

// Begin records the start of an attempt at t at now: the task is in flight.
func (s *State) Begin(t Task, now time.Time) *TaskRecord {
	rec := s.Record(t.Key())
	rec.Attempts++
	rec.UpdatedAt = now.UTC()
	s.InFlight = &InFlight{Key: t.Key(), Number: t.Number, Title: t.Title, StartedAt: rec.UpdatedAt}
	return rec
}

// Withdraw takes back the attempt at t that Begin recorded: an interrupted
// attempt is not a failure of the task.
func (s *State) Withdraw(t Task) {
	if rec := s.Tasks[t.Key()]; rec != nil && rec.Attempts > 0 {
		rec.Attempts--
	}
}

// Finish records t as done: nothing is in flight and no error stands. The
// task's record goes: its checkbox is the record of a done task, and state
// keeps only what resuming needs, so that it stays the same size however
// many tasks are done.
func (s *State) Finish(t Task) {
	delete(s.Tasks, t.Key())
	s.InFlight, s.LastError = nil, ""
}

// Drop records that the task in flight left the plan while it ran.
func (s *State) Drop() { s.InFlight = nil }

// Failed records why an attempt at t failed.
func (s *State) Failed(t Task, err error) { s.Record(t.Key()).LastError = capError(err.Error()) }

// capError keeps the start of a long error, which says what failed.
func capError(s string) string {
	if len(s) <= maxErrorBytes {
		return s
	}
	cut := maxErrorBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " [truncated; see the task's log]"
}

// Pause records that the plan paused for reason (an interruption, a hook).
func (s *State) Pause(reason string) {
	s.Paused, s.PausedReason, s.InFlight = true, reason, nil
}

// Fail pauses the plan after a failure for good, keeping reason as the
// last error.
func (s *State) Fail(reason string) {
	reason = capError(reason)
	s.Paused, s.PausedReason, s.LastError, s.InFlight = true, reason, reason, nil
}
