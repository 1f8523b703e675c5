package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// The landing queue: the coordinator lands the finished tasks waiting in it
// as one batch at a time, in the order they came. Each task's commit is put
// on top of the one before in the object store (gitwork.LandWith), the
// result is checked out in the land worktree, and the task's verify blocks
// run there through the gate and the hooks: each task is verified on its
// own landed tree. Only then does the branch move, once for the batch (a
// compare-and-swap), then the boxes are ticked in the project's plan
// through the tick door with one write, then state.json is written once
// for the tasks that landed. A conflict, or a verify block that fails on
// the landed tree, leaves that task out of the batch and its box unticked
// (the tasks after it land on the one before it): it runs again on the new
// head (runbook.retries), then the plan pauses naming it. A run killed
// between the move and the ticks leaves the batch landed and unticked: the
// next start verifies each task again, in the branch's order, and ticks it
// (recover.go).

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

// landResult is what came of landing one task of a batch: the landed
// commit, or why not; neither when the batch stopped before it (it waits
// in queue again).
type landResult struct {
	j      *job
	landed string
	err    error
	// already says the branch held landed when the batch found it moved:
	// the batch did not put it there.
	already bool
}

// skipped says the batch stopped before this task: it lands with the next.
func (lr landResult) skipped() bool { return lr.landed == "" && lr.err == nil }

// batchResult is what came of a batch: each task's landing, in order, and
// where the integration branch was found when someone else had moved it
// ("" when no one had).
type batchResult struct {
	results []landResult
	moved   string
}

// batchSize bounds how many queued commits land together: as many as the
// run has workers, which finish at most that many tasks at once.
func (c *coordinator) batchSize() int { return max(len(c.workers), c.r.workers(), 1) }

// startLanding lands the commits waiting in queue, up to batchSize, as one
// batch in a goroutine of its own: the git work and the verify blocks on
// each landed tree, and one move of the branch. It reads the head and line
// the coordinator knows, which nothing changes while it is in flight
// (finishLanding, on the coordinator's goroutine, takes the outcome in);
// state.json and the plan are the coordinator's alone.
func (c *coordinator) startLanding(ctx context.Context, wg *sync.WaitGroup) {
	n := min(len(c.queue), c.batchSize())
	jobs := slices.Clone(c.queue[:n])
	c.queue = c.queue[n:]
	for _, j := range jobs {
		if !j.announced {
			c.landingStarts(j, j.commit)
			j.announced = true
		}
	}
	c.landing = jobs
	head := c.head
	wg.Add(1)
	go func() {
		defer wg.Done()
		results, moved := c.landBatch(ctx, jobs, head)
		c.landings <- batchResult{results: results, moved: moved}
	}()
}

// finishLanding takes in the outcome of the batch in flight: the tasks that
// landed are ticked together, those that could not go back to run again.
// It returns the plan as it now is, or nil when it did not change.
func (c *coordinator) finishLanding(ctx context.Context, wg *sync.WaitGroup, p *plans.Plan, br batchResult) *plans.Plan {
	c.landing = nil
	var again []*job
	failed := false
	for _, lr := range br.results {
		switch {
		case lr.skipped():
			again = append(again, lr.j)
		case lr.err != nil:
			var le *landError
			failed = failed || !errors.As(lr.err, &le)
		}
	}
	c.queue = append(again, c.queue...)
	c.learnHead(br.moved, br.results)
	if !failed && len(c.queue) > 0 && c.failure == nil && ctx.Err() == nil {
		// The next batch lands on the new head while this one is ticked:
		// the git work and verify blocks of one landing overlap the
		// plan's and state.json's writes of the one before, which are
		// the coordinator's alone. A run that dies between them leaves
		// two batches landed and unticked, each task verified again and
		// ticked on resume (settleLanded).
		c.startLanding(ctx, wg)
	}
	return c.landedAll(ctx, p, br.results)
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
	landed, err := c.landCommit(ctx, j, commit)
	j.elapsed = elapsed
	return c.landedAll(ctx, p, []landResult{{j: j, landed: landed, err: err}})
}

// landedAll ticks the tasks of a batch whose commits landed, with one
// write of the plan and one of state.json for them, and sends those that
// could not land back to run again (each recorded in state.json as it
// goes); the tasks skipped wait in queue. Each task's events come in the
// batch's order. It returns the plan as it now is, or nil when it did not
// change.
func (c *coordinator) landedAll(ctx context.Context, p *plans.Plan, results []landResult) *plans.Plan {
	r := c.r
	var done []landResult
	for _, lr := range results {
		if lr.skipped() {
			continue
		}
		j := lr.j
		t := j.task
		var le *landError
		switch {
		case errors.As(lr.err, &le):
			c.conflict(j, le)
		case lr.err != nil:
			c.stop(fmt.Errorf("land task %s: %w", t.Label(), lr.err), &t)
		default:
			ev := j.base
			ev.Type, ev.Time, ev.Commit = EventTaskLanded, r.o.Now(), lr.landed
			r.o.Observe(ev)
			done = append(done, lr)
			continue
		}
		delete(c.running, t.Key())
		j.close()
	}
	if len(done) == 0 {
		return nil
	}
	defer func() {
		for _, lr := range done {
			delete(c.running, lr.j.task.Key())
			lr.j.close()
		}
	}()
	tasks := make([]plans.Task, len(done))
	for i, lr := range done {
		tasks[i] = lr.j.task
	}
	np, was, err := c.tick(ctx, p, tasks...)
	if err != nil {
		// No task of the batch failed: the plan could not be written, or
		// tasks left it (a *plans.RemovedError names them), as where a lone
		// run finds them gone.
		c.stop(err, nil)
		return nil
	}
	npr := np.Progress()
	// completed[i] is how many tasks were done once tasks[i] was ticked:
	// those after it in the batch that this write ticked were not yet.
	completed := make([]int, len(done))
	n := npr.Completed
	for i := len(done) - 1; i >= 0; i-- {
		completed[i] = n
		if !was[i] {
			n--
		}
	}
	for i, lr := range done {
		j, t := lr.j, lr.j.task
		ev := j.base
		ev.Type, ev.Time, ev.Completed, ev.Total, ev.ElapsedMS, ev.Commit = EventTaskDone, r.o.Now(), completed[i], npr.Total, j.elapsed, lr.landed
		ev.CostUSD = r.taskCost(t)
		r.o.Observe(ev)
		r.fireTaskDone(ctx, np, t, completed[i])
	}
	r.tasksDone(ctx, np, tasks)
	return np
}

// landCommit puts commit on the integration branch after the task's verify
// blocks passed on the landed tree, and returns the landed commit. A task
// already on the branch (a run that died after moving it) is not landed
// twice: recovered says the commit comes from a run that died, which may
// have landed it (a task of this run is on the branch only once ticked).
// A *landError says it could not land.
func (c *coordinator) landCommit(ctx context.Context, j *job, commit string) (string, error) {
	t := j.task
	head := c.head
	if j.recovered {
		var err error
		if head, err = c.readHead(ctx); err != nil {
			return "", err
		}
		if sha, err := c.landedCommit(ctx, head, t); err != nil || sha != "" {
			return sha, err
		}
	}
	j.commit = commit
	res, moved := c.landBatch(ctx, []*job{j}, head)
	c.learnHead(moved, res)
	return res[0].landed, res[0].err
}

// landBatch lands the commits of jobs on head, in order, each on top of the
// one before: each landed commit is made in the object store and its task's
// verify blocks run on its tree (the tree with it and those before it in
// the batch). A task that conflicts or whose verify fails is left out, and
// those after it land on top of the one before it. Then the branch is moved
// once, from head to the last landed commit (a compare-and-swap). When the
// swap fails, someone else moved the branch (a person's git, a verify
// block): the batch lands again, once, on where the branch is now (moved),
// but for the tasks whose commits the branch holds already (it was moved
// to one of this batch's landed commits, or above one): those count as
// landed there, and are not landed twice. A git error stops the batch:
// those before it land, those after it are skipped (they wait in queue).
// It changes nothing of the coordinator's.
func (c *coordinator) landBatch(ctx context.Context, jobs []*job, head string) (res []landResult, moved string) {
	// A task's base is a head this run assigned, on the line of the head
	// it knows: git need not be asked whether it is an ancestor. On a
	// branch someone else moved, git is asked.
	opts := gitwork.LandOptions{OnLine: func(sha string) bool { return c.line[sha] }}
	var before []landResult
	for {
		// on is the tasks' commits the branch holds already, once it was
		// found moved.
		on := map[int]string{}
		if moved != "" {
			landed, err := c.landedCommits(ctx, head)
			if err != nil {
				for k := range res {
					if res[k].landed != "" {
						res[k].landed, res[k].already, res[k].err = "", false, err
					}
				}
				return res, moved
			}
			for _, tc := range landed {
				on[tc.Task] = tc.SHA
			}
		}
		res = make([]landResult, len(jobs))
		top := head
	batch:
		for i, j := range jobs {
			res[i].j = j
			sha, already := on[taskNumber(j.task)], false
			var err error
			if sha != "" {
				// On the branch already: verified here when it is this
				// batch's own landed commit, else on its tree now.
				already = true
				if i >= len(before) || before[i].landed != sha {
					err = c.verifyLanded(ctx, j, sha)
				}
			} else {
				sha, err = c.repo.LandWith(ctx, top, j.commit, c.landMode(), opts)
				var ce *gitwork.ConflictError
				if errors.As(err, &ce) {
					err = &landError{files: ce.Files, why: fmt.Sprintf("its change conflicts with the work landed before it in %s", strings.Join(ce.Files, ", "))}
				} else if err == nil {
					err = c.verifyLanded(ctx, j, sha)
				}
			}
			var le *landError
			switch {
			case errors.As(err, &le):
				res[i].err = err
				continue
			case err != nil:
				// A git error ends the batch here: those before land,
				// those after wait in queue.
				res[i].err = err
				for k := i + 1; k < len(jobs); k++ {
					res[k].j = jobs[k]
				}
				break batch
			}
			res[i].landed, res[i].already = sha, already
			if !already {
				top = sha
			}
		}
		if top == head {
			return res, moved
		}
		err := c.repo.UpdateRef(ctx, c.ref, top, head)
		if err == nil {
			return res, moved
		}
		// The branch is read whatever ended the move: a git killed after
		// it moved the branch reports a failure, and the commits are
		// landed.
		cur, rerr := c.repo.RevParse(context.WithoutCancel(ctx), c.ref)
		if rerr == nil && cur == top {
			return res, moved
		}
		if moved != "" || rerr != nil || cur == head {
			for k := range res {
				if res[k].landed != "" {
					res[k].landed, res[k].already, res[k].err = "", false, err
				}
			}
			return res, moved
		}
		before = res
		head, moved, opts = cur, cur, gitwork.LandOptions{}
	}
}

// learnHead takes in what a landing found: where someone else had moved
// the branch (moved, the line starting again there), and the commits it
// landed on top, in order.
func (c *coordinator) learnHead(moved string, results []landResult) {
	if moved != "" {
		c.head, c.line = moved, map[string]bool{moved: true}
	}
	for _, lr := range results {
		if lr.err == nil && lr.landed != "" && !lr.already {
			c.advance(lr.landed)
		}
	}
}

func (c *coordinator) landMode() string {
	if c.r.o.Config.Run.Land == gitwork.LandMerge {
		return gitwork.LandMerge
	}
	return gitwork.LandRebase
}

// verifyLanded runs j's verify blocks on landed, its landed commit: a
// *landError says they failed there.
func (c *coordinator) verifyLanded(ctx context.Context, j *job, landed string) error {
	refusal, err := c.verifyAt(ctx, j.task, landed, j.out)
	if err != nil {
		return err
	}
	if refusal != "" {
		return &landError{why: "its verify blocks failed on the landed tree: " + firstLine(strings.TrimPrefix(refusal, "The tick was refused: "))}
	}
	return nil
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
	landed, err := c.landedCommits(ctx, head)
	if err != nil {
		return "", err
	}
	for _, tc := range landed {
		if tc.Task == taskNumber(t) {
			return tc.SHA, nil
		}
	}
	return "", nil
}

// landedCommits is the tasks' commits on the integration branch at head
// since the run's base, newest first, one per task (its newest) and none
// for a task whose newest commit was reverted since.
func (c *coordinator) landedCommits(ctx context.Context, head string) ([]gitwork.TaskCommit, error) {
	base := ""
	if c.r.st.Integration != nil {
		base = c.r.st.Integration.Base
	}
	commits, err := c.repo.TaskCommits(ctx, head, base, c.r.plan)
	if err != nil {
		return nil, err
	}
	reverted := map[string]bool{}
	seen := map[int]bool{}
	var landed []gitwork.TaskCommit
	for _, tc := range commits {
		if tc.Reverts != "" {
			reverted[tc.Reverts] = true
			continue
		}
		if seen[tc.Task] {
			continue
		}
		seen[tc.Task] = true
		if !reverted[tc.SHA] {
			landed = append(landed, tc)
		}
	}
	return landed, nil
}

// tick ticks ts in the project's plan through the tick door, with one
// write of the plan, then records them done in state.json, with one write.
// When one of them is no longer in the plan, none is ticked. was says,
// for each of ts, that its box was ticked already (a person ticked it).
func (c *coordinator) tick(ctx context.Context, p *plans.Plan, ts ...plans.Task) (np *plans.Plan, was []bool, err error) {
	r := c.r
	cur, err := r.current(p)
	if err != nil {
		return nil, nil, err
	}
	tasks := make([]plans.Task, 0, len(ts))
	was = make([]bool, 0, len(ts))
	var gone []plans.Task
	for _, t := range ts {
		if task, ok := cur.Lookup(t); ok {
			tasks = append(tasks, task)
			was = append(was, task.Done)
		} else {
			gone = append(gone, t)
		}
	}
	if len(gone) > 0 {
		return nil, nil, &plans.RemovedError{Plan: cur.Name, Tasks: gone}
	}
	np, err = r.tools.TickAll(cur, tasks)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range ts {
		delete(r.st.Running, t.Key())
		r.st.Finish(t)
	}
	if err := r.save(); err != nil {
		return nil, nil, err
	}
	return np, was, nil
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
