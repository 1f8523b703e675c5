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
	Invalid      string `json:"invalid,omitempty"`
	Current      string `json:"current,omitempty"`
	PausedReason string `json:"paused_reason,omitempty"`
	LastError    string `json:"last_error,omitempty"`
	PID          int    `json:"pid,omitempty"`
	// Sessions are the latest sessions that ran the active plan, oldest
	// first (state.json's session_ids).
	Sessions  []string `json:"sessions,omitempty"`
	UpdatedAt string   `json:"updated_at,omitempty"`
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
			if !st.UpdatedAt.IsZero() {
				ps.UpdatedAt = st.UpdatedAt.UTC().Format(time.RFC3339)
			}
			switch {
			case pid > 0:
				ps.State, ps.PID = "running", pid
				if st.InFlight != nil {
					ps.Current = fmt.Sprintf("%s (for %s)", st.InFlight.Label(), now.Sub(st.InFlight.StartedAt).Truncate(time.Second))
				}
			case st.Paused && !pr.Complete():
				ps.State, ps.PausedReason = "paused", st.PausedReason
			case !pr.Complete():
				// Recorded as active but nobody drives it: the last run died.
				ps.State = "active"
				if st.InFlight != nil {
					ps.Current = st.InFlight.Label() + " (interrupted)"
				}
			}
		}
		out.Plans = append(out.Plans, ps)
	}
	return out, nil
}
