package run

import (
	"context"
	"fmt"
	"time"

	"github.com/weavehq/weave/plans"
)

// PlanStatus is one plan as `weave status` shows it.
type PlanStatus struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	Completed int    `json:"completed"`
	Total     int    `json:"total"`
	Complete  bool   `json:"complete"`
	// Active marks the plan recorded in state.json.
	Active bool `json:"active"`
	// State is running, paused, active (recorded but no process drives it),
	// complete or idle.
	State string `json:"state"`
	// Invalid says why the plan cannot run (past the size or nesting
	// bound); State is then "invalid".
	Invalid      string   `json:"invalid,omitempty"`
	Current      *Current `json:"current,omitempty"`
	PausedReason string   `json:"paused_reason,omitempty"`
	LastError    string   `json:"last_error,omitempty"`
	PID          int      `json:"pid,omitempty"`
	// Sessions are the latest sessions that ran the active plan, oldest
	// first (state.json's session_ids).
	Sessions  []string `json:"sessions,omitempty"`
	UpdatedAt string   `json:"updated_at,omitempty"`
	// Running are the tasks the workers of a run with workers are on (or
	// were on, when the run died), by worker; Integration is the branch
	// such a run lands its tasks on. Both are absent for a run of one
	// task at a time.
	Running     []RunningTask      `json:"running,omitempty"`
	Integration *plans.Integration `json:"integration,omitempty"`
}

// ProjectStatus is the status of every plan of a project.
type ProjectStatus struct {
	Project string       `json:"project"`
	Active  string       `json:"active,omitempty"`
	Warning string       `json:"warning,omitempty"`
	Plans   []PlanStatus `json:"plans"`
}

// ReadStatus reads the plans and the work state of project. It takes no lock:
// it must work while a plan runs. It stops when ctx is done.
func ReadStatus(ctx context.Context, project string, now time.Time) (ProjectStatus, error) {
	out := ProjectStatus{Project: project, Plans: []PlanStatus{}}
	// Only plans changed since the last listing are parsed.
	all, err := plans.Summaries(ctx, project)
	if err != nil {
		return out, err
	}
	store := plans.ProjectStore(project)
	// Reading the status changes nothing: a broken state.json is reported,
	// and left for the next run to move aside.
	st, warning, err := store.Read()
	if err != nil {
		return out, err
	}
	out.Warning = warning
	pid := store.Holder()
	for _, p := range all {
		pr := p.Progress
		ps := PlanStatus{Name: p.Name, Path: p.Path, Completed: pr.Completed, Total: pr.Total, Complete: pr.Complete(), State: "idle"}
		if pr.Complete() {
			ps.State = "complete"
		}
		if p.Invalid != "" {
			ps.State, ps.Invalid = "invalid", p.Invalid
		}
		if st.IsActive(p.Path) {
			ps.Active = true
			out.Active = p.Name
			if !pr.Complete() {
				// A finished plan's last error is history, not its state.
				ps.LastError = st.LastError
			}
			ps.Sessions = st.SessionIDs
			ps.Running, ps.Integration = runningOf(st, now, pid == 0), st.Integration
			if !st.UpdatedAt.IsZero() {
				ps.UpdatedAt = st.UpdatedAt.UTC().Format(time.RFC3339)
			}
			switch {
			case pid > 0:
				ps.State, ps.PID = "running", pid
				if st.InFlight != nil {
					ps.Current = currentOf(st.InFlight, now, false)
				}
			case st.Paused && !pr.Complete():
				ps.State, ps.PausedReason = "paused", st.PausedReason
			case !pr.Complete():
				// Recorded as active but nobody drives it: the last run died.
				ps.State = "active"
				if st.InFlight != nil {
					ps.Current = currentOf(st.InFlight, now, true)
				}
			}
		}
		out.Plans = append(out.Plans, ps)
	}
	return out, nil
}

// Current is the task in flight, one field per fact, for scripts;
// Text puts it in words for people.
type Current struct {
	// Task is the task's number (its place in the plan for an unnumbered
	// Verification item), as `weave task done` takes it.
	Task  int    `json:"task"`
	Title string `json:"title"`
	// StartedAt is when the task started, RFC 3339.
	StartedAt string `json:"started_at,omitempty"`
	// ForSeconds is how long it has run, in whole seconds.
	ForSeconds int64 `json:"for_seconds"`
	// Interrupted says no process drives it: the run that started it died.
	Interrupted bool `json:"interrupted,omitempty"`

	label string
}

func currentOf(f *plans.InFlight, now time.Time, interrupted bool) *Current {
	c := &Current{Task: f.Number, Title: f.Title, Interrupted: interrupted, label: "task " + f.Label()}
	if !f.StartedAt.IsZero() {
		c.StartedAt = f.StartedAt.UTC().Format(time.RFC3339)
		c.ForSeconds = int64(now.Sub(f.StartedAt) / time.Second)
	}
	return c
}

// Text is the task in flight as a person reads it: "task 1 (Tick tock),
// for 2s", or "... (interrupted)".
func (c *Current) Text() string {
	if c == nil {
		return ""
	}
	if c.Interrupted {
		return c.label + " (interrupted)"
	}
	return fmt.Sprintf("%s, for %s", c.label, time.Duration(c.ForSeconds)*time.Second)
}
