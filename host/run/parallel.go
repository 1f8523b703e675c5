package run

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/logfile"
	"github.com/weavehq/weave/internal/realpath"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// A run with workers (run.workers above 1) is a coordinator, this process,
// and that many workers. The coordinator alone holds the project lock,
// writes state.json, ticks the project's plan (through the tick door, after
// a task's verify blocks passed on the landed tree) and calls the Observer;
// it is one goroutine, the loop below. Workers carry out tasks in worktrees
// of their own and hand back a commit; the coordinator lands those through
// one queue, the commits waiting in it together (land.go). A run that died
// is settled on the next start (recover.go).

// workers is how many tasks the run carries out at once.
func (r *runner) workers() int {
	return min(max(r.o.Config.Run.Workers, 1), config.MaxWorkers)
}

// WorkersRefusedError says a run with workers cannot work here (not a git
// repository, a detached HEAD, uncommitted changes to the plan's files),
// and what to do.
type WorkersRefusedError struct {
	Workers int
	Reason  string
	Hint    string
}

func (e *WorkersRefusedError) Error() string {
	return fmt.Sprintf("--workers %d: %s; %s, or run with --workers 1", e.Workers, e.Reason, e.Hint)
}

// IntegrationBranch is the branch a run with workers lands plan's tasks on.
func IntegrationBranch(plan string) string { return "weave/" + branchSafe(plan) }

// TaskBranch is the branch a worker carries out task n of plan on.
func TaskBranch(plan string, n int) string {
	return fmt.Sprintf("weave/%s-task-%d", branchSafe(plan), n)
}

func branchSafe(name string) string {
	s := strings.Trim(unsafeName.ReplaceAllString(name, "-"), "-.")
	s = strings.ReplaceAll(s, "..", "-")
	if s == "" {
		return "plan"
	}
	return s
}

// gitFound is what checkWorkers found of the project's repository: the
// repository, and its HEAD and branch.
type gitFound struct {
	repo         *gitwork.Repo
	head, branch string
}

// checkWorkers refuses a run with workers where it cannot work: outside a
// git repository (or below its top), on a detached HEAD or a branch with
// no commit, or with uncommitted changes to files the plan's open tasks
// touch (their Files lists; any change when one of them has none), which
// the workers would not see and landing could overwrite.
func (r *runner) checkWorkers(ctx context.Context, p *plans.Plan) error {
	n := r.workers()
	refuse := func(reason, hint string) error { return &WorkersRefusedError{Workers: n, Reason: reason, Hint: hint} }
	repo, err := gitwork.Open(ctx, r.o.Project)
	if err != nil {
		return refuse("workers need a git repository, and "+r.o.Project+" is not in one", "run `git init` and commit the project")
	}
	proj, err1 := realpath.Resolve("", r.o.Project)
	root, err2 := realpath.Resolve("", repo.Root)
	if err1 != nil || err2 != nil || proj != root {
		return refuse("the project is not the top of its git repository ("+repo.Root+")", "run weave from the repository's top directory")
	}
	sha, branch, err := repo.Head(ctx)
	if err != nil {
		return refuse(err.Error(), "check the repository with `git status`")
	}
	r.git = &gitFound{repo: repo, head: sha, branch: branch}
	switch {
	case sha == "":
		return refuse("the branch has no commit yet", "commit the project first")
	case branch == "":
		return refuse("HEAD is detached", "check out a branch (`git switch -c NAME`)")
	}
	var paths []string
	for _, t := range p.Tasks {
		if t.Done || slices.Contains(r.o.Skip, taskNumber(t)) {
			continue
		}
		refs := t.FileRefs()
		if len(refs) == 0 {
			paths = nil
			break
		}
		for _, f := range refs {
			fp := filepath.ToSlash(f.Path)
			if i := strings.IndexAny(fp, "*?["); i >= 0 {
				fp = fp[:max(0, strings.LastIndexByte(fp[:i], '/'))]
			}
			fp = strings.TrimPrefix(filepath.ToSlash(filepath.Clean("/"+fp)), "/")
			if fp == "" {
				paths = nil
				break
			}
			paths = append(paths, fp)
		}
		if paths == nil {
			break
		}
	}
	dirty, err := repo.Dirty(ctx, paths)
	if err != nil {
		return refuse(err.Error(), "check the repository with `git status`")
	}
	if len(dirty) > 0 {
		shown := dirty
		if len(shown) > 5 {
			shown = append(slices.Clone(shown[:5]), fmt.Sprintf("and %d more", len(dirty)-5))
		}
		return refuse("uncommitted changes to files the plan touches ("+strings.Join(shown, ", ")+"): workers start from the last commit and would not see them",
			"commit or stash them first")
	}
	return nil
}

// job is a task a worker is on.
type job struct {
	slot  int
	task  plans.Task
	a     Assignment
	base  Event
	start time.Time
	out   *lineEmitter
	close func()
	// recovered marks a task a run that died left running (recover.go).
	recovered bool
	worktree  string
	// commit is the task's commit, once its worker handed it back;
	// elapsed is how long the worker took.
	commit  string
	elapsed int64
	// announced says task.landing was sent: a task a batch skipped lands
	// with the next one without a second.
	announced bool
}

// result is what a worker's goroutine hands back.
type result struct {
	key string
	out Outcome
	err error
}

// coordinator is the state of a run with workers, owned by the run's one
// goroutine.
type coordinator struct {
	r    *runner
	repo *gitwork.Repo
	// branch is the integration branch, ref its full name.
	branch, ref string
	// dir holds the worktrees (.weave/worktrees/<plan>); landDir is where
	// a landed tree is checked.
	dir, landDir string
	landTools    *tools.Tools
	opts         plans.ScheduleOptions
	workers      []Worker
	busy         []bool
	// running has the tasks a worker is on and those waiting in queue to
	// land: a task's dependents wait until it is ticked.
	running map[string]*job
	// queue has the tasks whose commits wait to land, in the order they
	// came; their workers are free for the next task meanwhile. landing
	// is the batch landing in flight (land.go), whose outcome comes back
	// on landings.
	queue    []*job
	landing  []*job
	landings chan batchResult
	// head is the integration branch's head as this run moved it, and
	// line the heads it had in this run since it was last read from git,
	// each an ancestor of head: the coordinator alone moves the branch
	// (compare-and-swap, which tells it when a person moved it too), so
	// it need not ask git where it is for every task.
	head     string
	line     map[string]bool
	attempts map[string]int
	// notBefore holds when a task that failed may run again: the backoff
	// of a lone run's retries (RetryBackoff).
	notBefore map[string]time.Time
	results   chan result
	// failure, once set, stops new tasks: the run ends with it when the
	// tasks running have finished (and landed).
	failure     error
	failureTask *plans.Task
	// overBudget, once set, is the budget's refusal that ended a task: the
	// other workers are stopped as on Ctrl-C (cancel) and the run pauses
	// on it, nothing retried.
	overBudget *budget.Error
	cancel     context.CancelFunc
	// seen has what the run heard of its tasks' workers on the bus
	// (remoteseen.go).
	seen *seenBoard
}

// parallel carries out p's open tasks with workers.
func (r *runner) parallel(ctx context.Context, p *plans.Plan) (Result, error) {
	// Workers stream their output from their own goroutines; the Observer
	// sees one event at a time, in order.
	var mu sync.Mutex
	observe := r.o.Observe
	r.o.Observe = func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		observe(ev)
	}
	c, err := r.newCoordinator(ctx, p)
	if err != nil {
		return r.fail(p, nil, err)
	}
	// The git process that moved the run's branches ends with the run.
	defer func() { _ = c.repo.Close() }()
	if p, err = c.recover(ctx, p); err != nil {
		return r.fail(p, nil, err)
	}
	return c.loop(ctx, p)
}

func (r *runner) newCoordinator(ctx context.Context, p *plans.Plan) (*coordinator, error) {
	found := r.git
	if found == nil {
		repo, err := gitwork.Open(ctx, r.o.Project)
		if err != nil {
			return nil, err
		}
		head, branch, _ := repo.Head(ctx)
		found = &gitFound{repo: repo, head: head, branch: branch}
	}
	repo := found.repo
	n := r.workers()
	c := &coordinator{r: r, repo: repo, branch: IntegrationBranch(p.Name),
		dir:       filepath.Join(layout.NewProject(r.o.Project).Dir(), "worktrees", branchSafe(p.Name)),
		opts:      plans.ScheduleOptions{InferDeps: r.o.Config.Run.InferDeps, Skip: func(t plans.Task) bool { return slices.Contains(r.o.Skip, taskNumber(t)) }},
		busy:      make([]bool, n),
		running:   map[string]*job{},
		attempts:  map[string]int{},
		notBefore: map[string]time.Time{},
		results:   make(chan result, n),
		landings:  make(chan batchResult, 1),
		seen:      newSeenBoard(),
	}
	c.ref = "refs/heads/" + c.branch
	c.landDir = filepath.Join(c.dir, "land")
	if err := c.exclude(ctx); err != nil {
		return nil, err
	}
	st := r.st
	if st.Integration == nil || st.Integration.Branch != c.branch {
		head, from := found.head, found.branch
		if cur, err := repo.RevParse(ctx, c.ref); err == nil && cur != head {
			if _, err := repo.Git(ctx, "", "merge-base", "--is-ancestor", cur, head); err != nil {
				return nil, fmt.Errorf("branch %s holds commits that %s lacks (the work of an earlier run?): merge it (`git merge %s`) or delete it (`git branch -D %s`), then run again",
					c.branch, from, c.branch, c.branch)
			}
		}
		if _, err := repo.BranchAt(ctx, c.branch, head, true); err != nil {
			return nil, err
		}
		st.Integration = &plans.Integration{Branch: c.branch, Base: head, From: from}
		if err := r.save(); err != nil {
			return nil, err
		}
		c.head, c.line = head, map[string]bool{head: true}
	} else if _, err := c.readHead(ctx); err != nil {
		return nil, err
	}
	for i := range n {
		dir := filepath.Join(c.dir, "w"+strconv.Itoa(i+1))
		c.workers = append(c.workers, &localWorker{index: i + 1, dir: dir, rel: relTo(r.o.Project, dir), repo: repo,
			main: r.tools, cfg: r.o.Config, logger: r.o.Logger, agentFor: r.taskAgent})
	}
	// A run coordinated over NATS offers its tasks to remote workers too;
	// its local workers bid beside them (host/remote).
	if r.o.Pool != nil {
		var err error
		if c.workers, err = r.o.Pool(ctx, p.Name, repo, c.workers); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readHead reads where the integration branch is from git and makes it
// the head the run knows, its line starting again there.
func (c *coordinator) readHead(ctx context.Context) (string, error) {
	head, err := c.repo.RevParse(ctx, c.ref)
	if err != nil {
		return "", err
	}
	if head != c.head {
		c.head, c.line = head, map[string]bool{head: true}
	}
	return head, nil
}

// advance records that the run moved the integration branch from c.head to
// head, a commit on top of it.
func (c *coordinator) advance(head string) {
	c.head = head
	c.line[head] = true
}

// exclude keeps the worktrees out of the main tree's status, so that the
// project never looks changed because of them.
func (c *coordinator) exclude(ctx context.Context) error {
	gitDir, err := c.repo.CommonDir(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(gitDir, "info", "exclude")
	const line = "/" + layout.DirName + "/worktrees/"
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if slices.Contains(strings.Split(string(data), "\n"), line) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("keep the worktrees out of git status: %w", err)
	}
	text := line + "\n"
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		text = "\n" + text
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return fmt.Errorf("keep the worktrees out of git status: %w", err)
	}
	return f.Close()
}

// loop hands ready tasks to free workers, lands what they finish a batch
// at a time, and ends the run when nothing is left to run or a task failed
// for good.
func (c *coordinator) loop(ctx context.Context, p *plans.Plan) (Result, error) {
	r := c.r
	started := p
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.cancel = cancel
	var wg sync.WaitGroup
	defer wg.Wait()
	done := ctx.Done()
	for {
		// Every worker that finished hands in its result before tasks are
		// handed out: workers that finished together take their next
		// tasks at once, with one write of state.json, and none waits for
		// another's landing to start.
		for drained := false; !drained; {
			select {
			case res := <-c.results:
				if np := c.handle(ctx, p, res); np != nil {
					p = np
				}
			default:
				drained = true
			}
		}
		if np, err := r.current(p); err != nil {
			c.stop(err, nil)
		} else {
			p, r.res.Plan = np, np
		}
		if herr := r.halted(); herr != nil && c.failure == nil {
			c.stop(herr, nil)
		}
		var wake time.Time
		if c.failure == nil && c.overBudget == nil && ctx.Err() == nil {
			ready := p.Ready(c.runningKeys(), c.opts)
			now := r.o.Now()
			var batch []*job
			for _, t := range ready {
				if nb := c.notBefore[t.Key()]; now.Before(nb) {
					if wake.IsZero() || nb.Before(wake) {
						wake = nb
					}
					continue
				}
				slot := slices.Index(c.busy, false)
				if slot < 0 {
					break
				}
				batch = append(batch, c.assign(ctx, p, t, slot, c.head))
			}
			// One durable write for the tasks that start together, before
			// any of them does; it also carries the commits of the tasks
			// in queue to land.
			if len(batch) > 0 {
				if err := r.save(); err != nil {
					return r.fail(p, nil, err)
				}
				for _, j := range batch {
					c.launch(wctx, &wg, p, j)
				}
			}
		}
		// A worker that finished took its next task above; its commit lands
		// with those waiting beside it, one batch at a time, beside the
		// loop, which meanwhile takes in results and hands out tasks.
		if len(c.queue) > 0 && c.landing == nil {
			c.startLanding(ctx, &wg)
		}
		if len(c.running) == 0 {
			switch {
			case ctx.Err() != nil:
				return r.pause(p, "interrupted")
			case c.overBudget != nil:
				err := r.budgetPaused(p, c.overBudget)
				return r.res, err
			case c.failure != nil:
				var le *LandError
				if errors.As(c.failure, &le) {
					// Work that could not land is a person's to look at:
					// the plan pauses, naming the task, files and failure.
					err := r.pauseErr(p, le.Error())
					r.res.Err = le
					return r.res, err
				}
				return r.fail(p, c.failureTask, c.failure)
			case !wake.IsZero():
				// A task that failed waits out its backoff; Ctrl-C during
				// the wait pauses as during a task.
				if err := r.sleep(ctx, wake.Sub(r.o.Now())); err != nil || ctx.Err() != nil {
					return r.pause(p, "interrupted")
				}
				continue
			}
			if _, ok := r.next(p); ok {
				t, _ := r.next(p)
				var waits []string
				for _, w := range p.Waits(t, c.opts) {
					waits = append(waits, "task "+w.Label())
				}
				return r.fail(p, &t, fmt.Errorf("it cannot start: it waits for %s", strings.Join(waits, ", ")))
			}
			if left := r.skippedLeft(p); len(left) > 0 {
				return r.pause(p, fmt.Sprintf("only tasks left for a person remain (%s); tick each with `weave task done %s N` once done", strings.Join(left, ", "), p.Name))
			}
			if gone := plans.MissingTasks(started, p); len(gone) > 0 {
				return r.fail(p, nil, &plans.RemovedError{Plan: p.Name, Tasks: gone})
			}
			c.finish(ctx, p)
			return r.done(ctx, p)
		}
		var backoff <-chan time.Time
		var timer *time.Timer
		if !wake.IsZero() {
			timer = time.NewTimer(wake.Sub(r.o.Now()))
			backoff = timer.C
		}
		select {
		case res := <-c.results:
			if np := c.handle(ctx, p, res); np != nil {
				p = np
			}
		case lr := <-c.landings:
			if np := c.finishLanding(ctx, &wg, p, lr); np != nil {
				p = np
			}
		case <-c.seen.wake:
			c.recordSeen()
		case <-backoff:
		case <-done:
			// Ctrl-C: the workers' blocks are stopped with wctx; their
			// results, and the landing in flight, come in and the run
			// pauses once they have.
			cancel()
			done = nil
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// stop ends the starting of new tasks: the run ends with err once the
// running ones are in.
func (c *coordinator) stop(err error, t *plans.Task) {
	if c.failure == nil {
		c.failure, c.failureTask = err, t
	}
}

func (c *coordinator) runningKeys() []string {
	keys := make([]string, 0, len(c.running))
	for k := range c.running {
		keys = append(keys, k)
	}
	return keys
}

func (c *coordinator) maxAttempts() int { return 1 + c.r.o.Config.Runbook.Retries }

// assign records t as running on the worker in slot, from head; the
// caller writes state.json before any worker of the batch starts (launch).
func (c *coordinator) assign(ctx context.Context, p *plans.Plan, t plans.Task, slot int, head string) *job {
	r := c.r
	// The task goes with the blocks it had when the run started.
	t, _ = r.tools.AsStarted(ctx, p, t)
	key := t.Key()
	c.attempts[key]++
	w := c.workers[slot]
	// The worker reads its plan while the landing queue ticks p in place.
	a := Assignment{Plan: p.Clone(), Task: t, Session: r.session, Base: head, Branch: TaskBranch(p.Name, taskNumber(t)),
		Attempt: c.attempts[key], AttemptID: newAttemptID()}
	a.Report = c.seen.reporter(key, a.AttemptID)
	if r.st.Running == nil {
		r.st.Running = map[string]*plans.Running{}
	}
	rec := &plans.Running{Number: t.Number, Title: t.Title, Worker: w.Name(), Branch: a.Branch, Base: head,
		AttemptID: a.AttemptID, Attempt: a.Attempt, StartedAt: r.o.Now().UTC()}
	if lw, ok := w.(*localWorker); ok {
		rec.Worktree = lw.rel
	}
	r.st.Running[key] = rec
	r.st.Record(key).Attempts = a.Attempt
	pr := p.Progress()
	j := &job{slot: slot, task: t, a: a, worktree: rec.Worktree}
	j.base = Event{Plan: p.Name, Task: taskNumber(t), Title: t.Title, Verification: t.Verification, Completed: pr.Completed, Total: pr.Total,
		Attempt: a.Attempt, MaxAttempts: c.maxAttempts(), Worker: slot + 1}
	c.busy[slot] = true
	c.running[key] = j
	return j
}

// launch starts the worker of j, once state.json says j is running.
func (c *coordinator) launch(ctx context.Context, wg *sync.WaitGroup, p *plans.Plan, j *job) {
	r := c.r
	t, a := j.task, j.a
	logPath := r.logPath(p, t)
	j.out, j.close = r.taskLog(t, j.base, logPath, a.Attempt)
	j.start = r.o.Now()
	ev := j.base
	ev.Type, ev.Time, ev.Log, ev.Worktree, ev.Branch, ev.BaseRef = EventTaskStarted, j.start, relTo(r.o.Project, logPath), j.worktree, a.Branch, a.Base
	r.o.Observe(ev)
	w, key := c.workers[j.slot], t.Key()
	// The task's model calls are checked against its own budget and
	// charged to it, beside the other workers' tasks.
	ctx = r.budgetScope(ctx, t)
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, err := w.Run(ctx, a, j.out)
		j.out.flush()
		c.results <- result{key: key, out: out, err: err}
	}()
}

// handle takes a worker's result: a failure is retried or ends the run; a
// commit is recorded, then landed. It returns the plan as it now is, or
// nil when it did not change.
func (c *coordinator) handle(ctx context.Context, p *plans.Plan, res result) *plans.Plan {
	r := c.r
	j := c.running[res.key]
	c.busy[j.slot] = false
	t := j.task
	elapsed := r.o.Now().Sub(j.start).Milliseconds()
	if res.err != nil {
		delete(c.running, res.key)
		defer j.close()
		delete(r.st.Running, res.key)
		be := r.overBudgetFor(res.key, res.err)
		if ctx.Err() != nil || c.overBudget != nil || be != nil {
			// An attempt interrupted, stopped by another task's budget,
			// or refused a model call over a budget is not a failure of
			// the task: it runs again on resume.
			fmt.Fprintf(j.out, "=== stopped: %v\n", res.err)
			c.attempts[res.key]--
			r.st.Record(res.key).Attempts = c.attempts[res.key]
			if be != nil && c.overBudget == nil && ctx.Err() == nil {
				c.overBudget = be
				c.cancel()
			}
			_ = r.save()
			return nil
		}
		fmt.Fprintf(j.out, "=== failed: %v\n", res.err)
		err := res.err
		if herr := r.halted(); herr != nil {
			err = herr
		}
		r.st.Failed(t, err)
		var blocked *agents.HookBlockError
		retry := j.a.Attempt < c.maxAttempts() && !errors.Is(err, agents.ErrNeedsModel) && !errors.As(err, &blocked) && r.halted() == nil && c.failure == nil
		ev := j.base
		ev.Type, ev.Time, ev.Error, ev.Retry, ev.ElapsedMS = EventTaskFailed, r.o.Now(), err.Error(), retry, elapsed
		r.o.Observe(ev)
		if retry {
			c.notBefore[res.key] = r.o.Now().Add(RetryBackoff(j.a.Attempt))
		} else {
			c.stop(err, &t)
		}
		if serr := r.save(); serr != nil {
			c.stop(serr, nil)
		}
		return nil
	}
	// The task's work is committed on its branch, with its attempt's
	// trailer: from now on it is never lost, whatever happens to this
	// process (recover finds it there). The record goes to state.json
	// with the next write, the one of the task its worker takes next or
	// the one of its landing.
	if rec := r.st.Running[res.key]; rec != nil {
		rec.Commit = res.out.Commit
	}
	ev := j.base
	ev.Type, ev.Time, ev.Commit, ev.Branch, ev.Worktree = EventTaskCommitted, r.o.Now(), res.out.Commit, j.a.Branch, res.out.Worktree
	r.o.Observe(ev)
	j.commit, j.elapsed = res.out.Commit, elapsed
	c.queue = append(c.queue, j)
	return nil
}

// taskLog opens the task's log and returns the writer of its output, which
// goes to the log and, line by line, to task.output events.
func (r *runner) taskLog(t plans.Task, base Event, logPath string, attempt int) (*lineEmitter, func()) {
	f := r.openTaskLog(t, logPath, attempt)
	w := &lineEmitter{emit: func(line string) {
		ev := base
		ev.Type, ev.Time, ev.Output = EventTaskOutput, r.o.Now(), line
		r.o.Observe(ev)
	}}
	if f != nil {
		w.log = f
		return w, func() { w.flush(); _ = f.Close() }
	}
	return w, w.flush
}

// openTaskLog opens the task's log for an attempt, bounded as a lone run's
// is; nil when it cannot be written (output then goes to the view only).
func (r *runner) openTaskLog(t plans.Task, logPath string, attempt int) io.WriteCloser {
	f, err := logfile.Open(r.o.Project, logPath, int64(cmp.Or(r.o.Config.Runbook.MaxLogBytes, maxTaskLog)), 1)
	if err != nil {
		r.warn(fmt.Sprintf("cannot write the log %s; output goes to the terminal only", logPath))
		return nil
	}
	fmt.Fprintf(f, "=== %s attempt %d: %s\n", r.o.Now().UTC().Format(time.RFC3339), attempt, t.Label())
	return f
}

func newAttemptID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "att_" + hex.EncodeToString(b[:])
}

// finish says how the plan's work reaches the person's branch, or, with
// run.finish: ff, fast-forwards that branch when it can.
func (c *coordinator) finish(ctx context.Context, p *plans.Plan) {
	r := c.r
	defer c.clean(ctx)
	integ := r.st.Integration
	merge := fmt.Sprintf("plan %s's work is on branch %s: merge it with `git merge %s`", p.Name, c.branch, c.branch)
	if r.o.Config.Run.Finish != "ff" || integ == nil || integ.From == "" {
		r.res.Merge = merge
		return
	}
	_, cur, _ := c.repo.Head(ctx)
	if cur != integ.From {
		r.res.Merge = fmt.Sprintf("%s (not fast-forwarded: the project is on %s now, not %s)", merge, cur, integ.From)
		return
	}
	if _, err := c.repo.Git(ctx, "", "merge", "-q", "--ff-only", c.branch); err != nil {
		r.o.Logger.Warn("fast-forward the branch the run started from", "branch", integ.From, "err", err)
		r.res.Merge = fmt.Sprintf("%s (not fast-forwarded: %v)", merge, firstLine(err.Error()))
		return
	}
	r.res.Merge = fmt.Sprintf("plan %s's work is on %s (fast-forwarded to %s)", p.Name, integ.From, c.branch)
}

// clean removes, once the plan is done, the worktrees of its workers and the
// branches of its tasks, whose work is all on the integration branch.
func (c *coordinator) clean(ctx context.Context) {
	cleanFinished(ctx, c.repo, c.dir, c.branch, c.r.o.Logger)
}

// cleanFinished removes the worktrees under dir of a plan whose tasks are
// all done, and the branches of its tasks (branch-task-*). It is the last
// step of a run with workers, and the first of the next start when a run
// was killed after its last tick but before it had cleaned up.
func cleanFinished(ctx context.Context, repo *gitwork.Repo, dir, branch string, logger *slog.Logger) {
	// The directories go, then git forgets them in one prune: a
	// `git worktree remove` each would cost a process per worker.
	if err := os.RemoveAll(dir); err != nil {
		logger.Warn("remove the worktrees of a finished plan", "dir", dir, "err", err)
	}
	if err := repo.Prune(ctx); err != nil {
		logger.Warn("forget the worktrees of a finished plan", "err", err)
	}
	// One transaction deletes them all, reflogs with them: git branch -D
	// would rewrite the config once for each (to drop its section, which
	// a task's branch has not got). A branch some worktree has checked
	// out (someone's, left there) is kept; a symbolic ref is deleted
	// itself, not what it names.
	out, err := repo.Git(ctx, "", "for-each-ref", "--format=%(if)%(worktreepath)%(then)%(else)delete %(refname)%(end)", "refs/heads/"+branch+"-task-*")
	if err != nil {
		return
	}
	var del []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "delete ") {
			del = append(del, line)
		}
	}
	if len(del) == 0 {
		return
	}
	if _, err := repo.GitInput(ctx, "", []byte(strings.Join(del, "\n")+"\n"), "update-ref", "--no-deref", "--stdin"); err == nil {
		return
	}
	// One branch held (its lock taken) fails them all: each is deleted
	// on its own, as git branch -D would have.
	for _, d := range del {
		ref := strings.TrimPrefix(d, "delete ")
		if _, err := repo.Git(ctx, "", "update-ref", "--no-deref", "-d", ref); err != nil {
			logger.Warn("delete a task branch of a finished plan", "ref", ref, "err", err)
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// fireTaskDone tells the hooks a task is done, as a lone run does, and
// keeps what they say for the model; completed is how many tasks were done
// once it was ticked. tasksDone follows, once for the tasks ticked together.
func (r *runner) fireTaskDone(ctx context.Context, np *plans.Plan, t plans.Task, completed int) {
	out := r.fire(ctx, plugins.Event{Name: plugins.EventPlanTaskDone, Plan: np.Name,
		Task: &plugins.TaskRef{Number: t.Number, Title: t.Title}, Data: map[string]any{"completed": completed, "total": np.Progress().Total}})
	r.forModel = append(r.forModel, out.Context...)
}

// tasksDone tells the hooks the plan's TODOs are done when ts, just ticked,
// held one of them and left none open.
func (r *runner) tasksDone(ctx context.Context, np *plans.Plan, ts []plans.Task) {
	if slices.ContainsFunc(ts, func(t plans.Task) bool { return !t.Verification }) {
		r.todosDone(ctx, np)
	}
}
