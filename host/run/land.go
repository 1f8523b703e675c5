package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

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

// landResult is what came of a landing: the landed commit, or why not,
// and where the integration branch was found when someone else had moved
// it ("" when no one had).
type landResult struct {
	j      *job
	landed string
	moved  string
	err    error
}

// startLanding lands the commit of j, a task its worker finished, in a
// goroutine of its own: the git work and the verify blocks on the landed
// tree. It reads the head and line the coordinator knows, which nothing
// changes while it is in flight (finishLanding, on the coordinator's
// goroutine, takes the outcome in); state.json and the plan are the
// coordinator's alone.
func (c *coordinator) startLanding(ctx context.Context, wg *sync.WaitGroup, j *job) {
	c.landingStarts(j, j.commit)
	c.landing = j
	head := c.head
	wg.Add(1)
	go func() {
		defer wg.Done()
		landed, moved, err := c.landOnto(ctx, j.task, j.commit, head, j.out)
		c.landings <- landResult{j: j, landed: landed, moved: moved, err: err}
	}()
}

// finishLanding takes in the outcome of the landing in flight: the task is
// ticked when it landed, or goes back to run again. It returns the plan as
// it now is, or nil when it did not change.
func (c *coordinator) finishLanding(ctx context.Context, wg *sync.WaitGroup, p *plans.Plan, lr landResult) *plans.Plan {
	c.landing = nil
	j := lr.j
	defer func() {
		delete(c.running, j.task.Key())
		j.close()
	}()
	c.learnHead(lr.landed, lr.moved, lr.err)
	if lr.err == nil && len(c.queue) > 0 && c.failure == nil && ctx.Err() == nil {
		// The next task lands on the new head while this one is ticked:
		// the git work and verify blocks of one landing overlap the
		// plan's and state.json's writes of the one before, which are
		// the coordinator's alone. A run that dies between them leaves
		// two tasks landed and unticked, each verified again and ticked
		// on resume (settleLanded), as one.
		next := c.queue[0]
		c.queue = c.queue[1:]
		c.startLanding(ctx, wg, next)
	}
	return c.landed(ctx, p, j, lr.landed, lr.err, j.elapsed)
}

// landingStarts says task j's commit is landing.
func (c *coordinator) landingStarts(j *job, commit string) {
	r := c.r
	ev := j.base
	ev.Type, ev.Time, ev.Commit = EventTaskLanding, r.o.Now(), commit
	r.o.Observe(ev)
	if rec := r.st.Running[j.task.Key()]; rec != nil {
		rec.Landing = true
	}
}

// land lands task j's commit and ticks the task, before it returns; it
// returns the plan as it now is, or nil when it did not change.
func (c *coordinator) land(ctx context.Context, p *plans.Plan, j *job, commit string, elapsed int64) *plans.Plan {
	c.landingStarts(j, commit)
	landed, err := c.landCommit(ctx, j.task, commit, j.out, j.recovered)
	return c.landed(ctx, p, j, landed, err, elapsed)
}

// landed ticks task j once its commit landed (err nil), or sends it back
// to run again; it returns the plan as it now is, or nil when it did not
// change.
func (c *coordinator) landed(ctx context.Context, p *plans.Plan, j *job, landed string, err error, elapsed int64) *plans.Plan {
	r := c.r
	t := j.task
	var le *landError
	switch {
	case errors.As(err, &le):
		c.conflict(j, le)
		return nil
	case err != nil:
		c.stop(fmt.Errorf("land task %s: %w", t.Label(), err), &t)
		return nil
	}
	ev := j.base
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
	landed, moved, err := c.landOnto(ctx, t, commit, head, out)
	c.learnHead(landed, moved, err)
	return landed, err
}

// landOnto lands commit on head, the integration head the coordinator
// knows: the landed commit is made in the object store, t's verify blocks
// run on its tree, then the branch is moved from head to it (a
// compare-and-swap). When the swap fails, someone else moved the branch
// (a person's git): the task lands again, verify and all, on where the
// branch is now (moved), once. It changes nothing of the coordinator's
// (learnHead takes in what it found), so that it may run beside the loop.
// A *landError says it could not land.
func (c *coordinator) landOnto(ctx context.Context, t plans.Task, commit, head string, out io.Writer) (landed, moved string, err error) {
	// The task's base is a head this run assigned, on the line of the
	// head it knows: git need not be asked whether it is an ancestor.
	// On a branch someone else moved, git is asked.
	opts := gitwork.LandOptions{OnLine: func(sha string) bool { return c.line[sha] }}
	for {
		landed, err := c.repo.LandWith(ctx, head, commit, c.landMode(), opts)
		var ce *gitwork.ConflictError
		if errors.As(err, &ce) {
			return "", moved, &landError{files: ce.Files, why: fmt.Sprintf("its change conflicts with the work landed before it in %s", strings.Join(ce.Files, ", "))}
		}
		if err != nil {
			return "", moved, err
		}
		if refusal, err := c.verifyAt(ctx, t, landed, out); err != nil {
			return "", moved, err
		} else if refusal != "" {
			return "", moved, &landError{why: "its verify blocks failed on the landed tree: " + firstLine(strings.TrimPrefix(refusal, "The tick was refused: ")), files: nil}
		}
		err = c.repo.UpdateRef(ctx, c.ref, landed, head)
		if err == nil {
			return landed, moved, nil
		}
		// The branch is read whatever ended the move: a git killed after
		// it moved the branch reports a failure, and the commit is landed.
		cur, rerr := c.repo.RevParse(context.WithoutCancel(ctx), c.ref)
		if rerr == nil && cur == landed {
			return landed, moved, nil
		}
		if moved != "" || rerr != nil || cur == head {
			return "", moved, err
		}
		head, moved, opts = cur, cur, gitwork.LandOptions{}
	}
}

// learnHead takes in what a landing found: where someone else had moved
// the branch (moved, the line starting again there), and the commit it
// landed on top (when err is nil).
func (c *coordinator) learnHead(landed, moved string, err error) {
	if moved != "" {
		c.head, c.line = moved, map[string]bool{moved: true}
	}
	if err == nil && landed != "" {
		c.advance(landed)
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
