package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// The landing queue: the coordinator lands one finished task at a time.
// A task's commit is put on top of the integration head in the object
// store (gitwork.Land), the result is checked out in the land worktree,
// the task's verify blocks run there through the gate and the hooks, and
// only when they pass does the branch move (a compare-and-swap), then the
// box is ticked in the project's plan through the tick door, then
// state.json. A conflict, or a verify block that fails on the landed
// tree, leaves the branch where it was and the box unticked: the task runs
// again on the new head (runbook.retries), then the plan pauses naming it.

// LandError says a task of a run with workers could not land after its
// attempts: its change conflicts with the work landed before it (Files), or
// its verify blocks fail on the landed tree. The plan pauses with it; the
// task's last commit stays on its branch.
type LandError struct {
	Task     string // the task's label, "3 (Title)"
	Files    []string
	Why      string
	Attempts int
	Branch   string
}

func (e *LandError) Error() string {
	return fmt.Sprintf("task %s could not land after %d attempt(s): %s; its last attempt is on branch %s", e.Task, e.Attempts, e.Why, e.Branch)
}

// landError is why a task's commit did not land: the files it conflicts
// in, or the verify block that failed on the landed tree.
type landError struct {
	files []string
	why   string
}

func (e *landError) Error() string { return e.why }

// land lands task j's commit and ticks the task; it returns the plan as it
// now is, or nil when it did not change.
func (c *coordinator) land(ctx context.Context, p *plans.Plan, j *job, commit string, elapsed int64) *plans.Plan {
	r := c.r
	t := j.task
	ev := j.base
	ev.Type, ev.Time, ev.Commit = EventTaskLanding, r.o.Now(), commit
	r.o.Observe(ev)
	if rec := r.st.Running[t.Key()]; rec != nil {
		rec.Landing = true
	}
	landed, err := c.landCommit(ctx, t, commit, j.out, j.recovered)
	var le *landError
	switch {
	case errors.As(err, &le):
		c.conflict(j, le)
		return nil
	case err != nil:
		c.stop(fmt.Errorf("land task %s: %w", t.Label(), err), &t)
		return nil
	}
	ev = j.base
	ev.Type, ev.Time, ev.Commit = EventTaskLanded, r.o.Now(), landed
	r.o.Observe(ev)
	np, err := c.tick(ctx, p, t)
	if err != nil {
		c.stop(err, &t)
		return nil
	}
	npr := np.Progress()
	ev = j.base
	ev.Type, ev.Time, ev.Completed, ev.Total, ev.ElapsedMS, ev.Commit = EventTaskDone, r.o.Now(), npr.Completed, npr.Total, elapsed, landed
	ev.CostUSD = r.taskCost(t)
	r.o.Observe(ev)
	r.fireTaskDone(ctx, np, t)
	return np
}

// landCommit puts commit on the integration branch after the task's verify
// blocks passed on the landed tree, and returns the landed commit. A task
// already on the branch (a run that died after moving it) is not landed
// twice: recovered says the commit comes from a run that died, which may
// have landed it (a task of this run is on the branch only once ticked).
// A *landError says it could not land.
func (c *coordinator) landCommit(ctx context.Context, t plans.Task, commit string, out io.Writer, recovered bool) (string, error) {
	head := c.head
	if recovered {
		var err error
		if head, err = c.readHead(ctx); err != nil {
			return "", err
		}
		if sha, err := c.landedCommit(ctx, head, t); err != nil || sha != "" {
			return sha, err
		}
	}
	// The task's base is a head this run assigned, on the line of the
	// current one: git need not be asked whether it is an ancestor.
	onLine := gitwork.LandOptions{OnLine: func(sha string) bool { return c.line[sha] }}
	for moved := false; ; moved = true {
		landed, err := c.repo.LandWith(ctx, head, commit, c.landMode(), onLine)
		var ce *gitwork.ConflictError
		if errors.As(err, &ce) {
			return "", &landError{files: ce.Files, why: fmt.Sprintf("its change conflicts with the work landed before it in %s", strings.Join(ce.Files, ", "))}
		}
		if err != nil {
			return "", err
		}
		if refusal, err := c.verifyAt(ctx, t, landed, out); err != nil {
			return "", err
		} else if refusal != "" {
			return "", &landError{why: "its verify blocks failed on the landed tree: " + firstLine(strings.TrimPrefix(refusal, "The tick was refused: ")), files: nil}
		}
		err = c.repo.UpdateRef(ctx, c.ref, landed, head)
		if err == nil {
			c.advance(landed)
			return landed, nil
		}
		// The compare-and-swap failed: someone else moved the branch
		// (a person's git). The task lands again, verify and all, on
		// where the branch is now; once.
		cur, rerr := c.readHead(ctx)
		if moved || rerr != nil || cur == head {
			return "", err
		}
		head = cur
	}
}

func (c *coordinator) landMode() string {
	if c.r.o.Config.Run.Land == gitwork.LandMerge {
		return gitwork.LandMerge
	}
	return gitwork.LandRebase
}

// verifyAt runs t's verify blocks on commit, checked out in the land
// worktree, through the capability gate and the tool hooks, as the tick
// door runs them; it returns the refusal, "" when they passed.
func (c *coordinator) verifyAt(ctx context.Context, t plans.Task, commit string, out io.Writer) (string, error) {
	if len(t.VerifyBlocks()) == 0 {
		return "", nil
	}
	if err := c.repo.Detached(ctx, c.landDir, commit); err != nil {
		return "", err
	}
	if c.landTools == nil {
		lt, err := c.r.tools.At(c.landDir)
		if err != nil {
			return "", err
		}
		c.landTools = lt
	}
	role := roleOf(c.r, t)
	ctx = tools.WithScope(ctx, tools.Scope{Output: out, Timeout: c.r.o.Config.Runbook.BlockTimeout, TimeoutSet: true})
	return c.landTools.Verify(ctx, tools.Caller{Agent: role}, c.r.session, t)
}

// landedCommit is the commit of task t on the integration branch at head
// since the run's base, "" when there is none (or it was reverted since).
func (c *coordinator) landedCommit(ctx context.Context, head string, t plans.Task) (string, error) {
	base := ""
	if c.r.st.Integration != nil {
		base = c.r.st.Integration.Base
	}
	commits, err := c.repo.TaskCommits(ctx, head, base, c.r.plan)
	if err != nil {
		return "", err
	}
	reverted := map[string]bool{}
	for _, tc := range commits {
		if tc.Reverts != "" {
			reverted[tc.Reverts] = true
			continue
		}
		if tc.Task == taskNumber(t) {
			if reverted[tc.SHA] {
				return "", nil
			}
			return tc.SHA, nil
		}
	}
	return "", nil
}

// tick ticks t in the project's plan through the tick door, then records
// it done in state.json.
func (c *coordinator) tick(ctx context.Context, p *plans.Plan, t plans.Task) (*plans.Plan, error) {
	r := c.r
	cur, err := r.current(p)
	if err != nil {
		return nil, err
	}
	task, ok := cur.Lookup(t)
	if !ok {
		return nil, &plans.RemovedError{Plan: cur.Name, Tasks: []plans.Task{t}}
	}
	np, _, err := r.tools.Tick(cur, task)
	if err != nil {
		return nil, fmt.Errorf("tick task %s: %w", t.Label(), err)
	}
	delete(r.st.Running, t.Key())
	r.st.Finish(t)
	if err := r.save(); err != nil {
		return nil, err
	}
	return np, nil
}

// conflict sends a task that could not land back to run on the new head,
// or ends the run naming it once its attempts are spent.
func (c *coordinator) conflict(j *job, le *landError) {
	r := c.r
	t := j.task
	delete(r.st.Running, t.Key())
	retry := j.a.Attempt < c.maxAttempts() && c.failure == nil
	err := fmt.Errorf("could not land: %s", le.why)
	r.st.Failed(t, err)
	fmt.Fprintf(j.out, "=== could not land: %s\n", le.why)
	ev := j.base
	ev.Type, ev.Time, ev.Error, ev.Retry = EventTaskConflict, r.o.Now(), le.why, retry
	r.o.Observe(ev)
	if !retry {
		c.stop(&LandError{Task: t.Label(), Files: le.files, Why: le.why, Attempts: j.a.Attempt, Branch: j.a.Branch}, nil)
	}
	if err := r.save(); err != nil {
		c.stop(err, nil)
	}
}

// roleOf is the role whose row a task's verify blocks run under.
func roleOf(r *runner, t plans.Task) string {
	if agents.RunsAsRunbook(t) {
		return agents.Tapestry
	}
	role, _ := r.taskAgent(t)
	return role
}
