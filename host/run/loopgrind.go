package run

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/weavehq/weave/bus/loop"
)

// The loop events of a run with workers follow the source document's
// grind mode: the run is a grind frame (iter = tasks completed + 1, max =
// the plan's task count) and each task a worker is on is an issue frame
// nested under it, with its worktree, branch and base, iter its attempt
// and max its limit of attempts. A task's frame is there from its
// task.started until it is done, fails or cannot land.

// toGrind turns a run first seen as a lone one into a grind: a coordinator
// that did not say on plan.started that it has workers is known by its
// workers' events. The run id keeps the run's start.
func (lo *loopObserver) toGrind(ev Event) {
	lo.grind = true
	if lo.start.IsZero() {
		lo.start = ev.Time
		lo.planPath = planFile(lo.project, ev.Plan)
	}
	lo.runID = loop.RunID(loop.ModeGrind, lo.start, lo.pid)
}

// issueStarted records the task a worker started (task.started).
func (lo *loopObserver) issueStarted(ev Event) {
	if !lo.grind || ev.Task == 0 {
		return
	}
	if lo.issues == nil {
		lo.issues = map[int]Event{}
	}
	lo.issues[ev.Task] = ev
}

// issueEnded forgets a task that stopped running.
func (lo *loopObserver) issueEnded(ev Event) {
	delete(lo.issues, ev.Task)
}

// issueFrames are the running tasks' frames, by worker then task. A frame
// that cannot be valid (a remote worker's worktree is not a path here) is
// left out, so that the grind's STATE is still published.
func (lo *loopObserver) issueFrames() []loop.Frame {
	evs := make([]Event, 0, len(lo.issues))
	for _, ev := range lo.issues {
		evs = append(evs, ev)
	}
	slices.SortFunc(evs, func(a, b Event) int { return cmp.Or(cmp.Compare(a.Worker, b.Worker), cmp.Compare(a.Task, b.Task)) })
	var out []loop.Frame
	for _, ev := range evs {
		f := lo.issueFrame(ev)
		if err := f.Validate(); err != nil {
			lo.log.Debug("issue frame left out of the loop state", "task", ev.Task, "err", err)
			continue
		}
		out = append(out, f)
	}
	return out
}

// issueFrame is the frame of the task ev started.
func (lo *loopObserver) issueFrame(ev Event) loop.Frame {
	id := fmt.Sprintf("%s-task-%d", ev.Plan, ev.Task)
	wt := ev.Worktree
	if wt != "" && !filepath.IsAbs(wt) {
		wt = filepath.Join(lo.project, wt)
	}
	if abs, err := filepath.Abs(wt); err == nil && wt != "" {
		wt = abs
	}
	iter := max(ev.Attempt, 1)
	return loop.Frame{
		ID:           fmt.Sprintf("issue-%s-%d", id, ev.Time.Unix()),
		Mode:         loop.ModeIssue,
		Iter:         iter,
		Max:          max(ev.MaxAttempts, iter),
		PromptFile:   lo.planPath,
		PromptBlob:   lo.blobFor(),
		IssueID:      id,
		WorktreePath: wt,
		Branch:       ev.Branch,
		BaseRef:      ev.BaseRef,
	}
}

// eventWorkers is what plan.started says of the run's workers: how many
// when it has more than one, else 0 (a run of one task at a time, whose
// events stay as they were).
func (r *runner) eventWorkers() int {
	if n := r.workers(); n > 1 {
		return n
	}
	return 0
}
