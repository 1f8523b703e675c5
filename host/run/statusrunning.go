package run

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weavehq/weave/plans"
)

// RunningTask is a task a worker of a run with workers is on, as `weave
// status` shows it: one field per fact, for scripts; Text puts it in words.
type RunningTask struct {
	// Worker names the worker: its number for a local one, its name for
	// one joined over the bus.
	Worker string `json:"worker"`
	// Task is the task's number, as `weave task done` takes it.
	Task     int    `json:"task"`
	Title    string `json:"title"`
	Branch   string `json:"branch"`
	Worktree string `json:"worktree,omitempty"`
	// Base is the integration commit the task started from.
	Base    string `json:"base,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// StartedAt is when the task started, RFC 3339; ForSeconds how long it
	// has run, in whole seconds.
	StartedAt  string `json:"started_at,omitempty"`
	ForSeconds int64  `json:"for_seconds"`
	// Commit is the task's commit on its branch once its worker finished;
	// Landing says it is landing on the integration branch now.
	Commit  string `json:"commit,omitempty"`
	Landing bool   `json:"landing,omitempty"`
	// Interrupted says no process drives it: the run died. The next
	// start-work lands its commit, or runs it again.
	Interrupted bool `json:"interrupted,omitempty"`
	// Labels are what a worker joined over the bus offers; LastHeartbeat
	// (RFC 3339) is when the run last heard from it, SilentSeconds how
	// long ago that was. Absent for a local worker.
	Labels        []string `json:"labels,omitempty"`
	LastHeartbeat string   `json:"last_heartbeat,omitempty"`
	SilentSeconds *int64   `json:"silent_seconds,omitempty"`
}

// runningOf lists st's running tasks by worker, then task.
func runningOf(st *plans.State, now time.Time, interrupted bool) []RunningTask {
	var out []RunningTask
	for key, r := range st.Running {
		rt := RunningTask{Worker: r.Worker, Task: r.Number, Title: r.Title, Branch: r.Branch, Worktree: r.Worktree, Base: r.Base,
			Attempt: r.Attempt, Commit: r.Commit, Landing: r.Landing, Interrupted: interrupted}
		if rt.Task == 0 {
			rt.Task, _ = strconv.Atoi(key)
		}
		rt.Labels = r.Labels
		if !r.Heartbeat.IsZero() {
			rt.LastHeartbeat = r.Heartbeat.UTC().Format(time.RFC3339)
			silent := int64(max(now.Sub(r.Heartbeat), 0) / time.Second)
			rt.SilentSeconds = &silent
		}
		if !r.StartedAt.IsZero() {
			rt.StartedAt = r.StartedAt.UTC().Format(time.RFC3339)
			rt.ForSeconds = int64(now.Sub(r.StartedAt) / time.Second)
		}
		out = append(out, rt)
	}
	slices.SortFunc(out, func(a, b RunningTask) int {
		an, aerr := strconv.Atoi(a.Worker)
		bn, berr := strconv.Atoi(b.Worker)
		if aerr == nil && berr == nil && an != bn {
			return cmp.Compare(an, bn)
		}
		return cmp.Or(cmp.Compare(a.Worker, b.Worker), cmp.Compare(a.Task, b.Task), cmp.Compare(a.Title, b.Title))
	})
	return out
}

// Text is the running task as a person reads it: "worker 1: task 3
// (Build) on weave/p-task-3, for 12s", and what it waits for; a worker
// on the bus with its labels and last heartbeat: "worker big [gpu]: ...,
// for 12s, last heartbeat 2s ago".
func (r RunningTask) Text() string {
	worker := r.Worker
	if len(r.Labels) > 0 {
		worker += " [" + strings.Join(r.Labels, ",") + "]"
	}
	s := fmt.Sprintf("worker %s: task %s on %s", worker, plans.TaskLabel(r.Task, r.Title), r.Branch)
	switch {
	case r.Interrupted && r.Commit != "":
		return s + " (interrupted; committed, lands on the next start-work)"
	case r.Interrupted:
		return s + " (interrupted)"
	case r.Landing:
		s += ", landing"
	case r.Commit != "":
		s += ", committed, waiting to land"
	}
	s = fmt.Sprintf("%s, for %s", s, time.Duration(r.ForSeconds)*time.Second)
	if r.SilentSeconds != nil {
		s += fmt.Sprintf(", last heartbeat %s ago", time.Duration(*r.SilentSeconds)*time.Second)
	}
	return s
}
