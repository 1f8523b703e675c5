package run

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/logfile"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// Status is how a start-work run ended.
type Status string

// The statuses of a run.
const (
	// StatusDone: every task of the plan is ticked.
	StatusDone Status = "done"
	// StatusComplete: the plan asked for had nothing left to do.
	StatusComplete Status = "complete"
	// StatusPaused: the user interrupted the run; it resumes later.
	StatusPaused Status = "paused"
	// StatusFailed: a task failed (after its retries) or could not run.
	StatusFailed Status = "failed"
	// StatusInvalid: the plan has validation errors.
	StatusInvalid Status = "invalid"
	// StatusNotFound: no plan matches; StatusNone: there are no plans.
	StatusNotFound Status = "not-found"
	StatusNone     Status = "none"
	// StatusChoose: several plans could run; the user must name one.
	StatusChoose Status = "choose"
	// StatusBlocked: a hook refused the start.
	StatusBlocked Status = "blocked"
)

// Options configures a start-work run.
type Options struct {
	// Project is the project root, the directory holding .weave/.
	Project string
	// Name selects a plan; empty runs the decision procedure.
	Name string
	// Config is the project's configuration; nil means the defaults.
	Config *config.Config
	// Agent carries out the tasks (Tapestry); nil means Tapestry in this
	// process. The CLI passes the Tapestry plugin, served by a subprocess.
	Agent plugins.Agent
	// Route, when set, gives some tasks to another agent (a category's
	// Shuttle); nil leaves every task to Agent.
	Route Router
	// Warm, when set, is told the roles of the agents the plan's open
	// tasks will need once the plan is known, so that their plugins can
	// start while the run gets going. It must not block.
	Warm func(roles ...string)
	// Hooks receive the run's events; nil means none.
	Hooks *hooks.Pipeline
	// Tools carry out the agent's tool calls, through the capability gate
	// and the tool hooks; nil means the project's tools with Hooks and no
	// delegation.
	Tools *tools.Tools
	// Session names the run's session; empty means a new one.
	Session string
	// ServeAgents, when set, is called once the run holds the project lock:
	// it makes the agents that delegation reaches answer for session, until
	// the returned stop is called as the run ends.
	ServeAgents func(ctx context.Context, session string) (stop func() error, err error)
	// Logger is the host log; nil discards it.
	Logger *slog.Logger
	// Halted, when set, says why the run must stop now (a hook whose
	// failure policy is closed failed); nil means go on.
	Halted func() error
	// Observe receives the run's events; nil discards them.
	Observe Observer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx is done, between the attempts of a
	// failing task; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Skip lists tasks (by number, or position when unnumbered) the run
	// leaves unchecked for a person to do: start-work --skip.
	Skip []int
	// Verbose shows the plan's template warnings on every run; otherwise
	// they show when they differ from what the last run of the plan showed.
	Verbose bool
	// Review, when set, reviews the plan's work once its last task is
	// ticked (review.on_complete); see review.go.
	Review Reviewer
	// History reads an agent's conversation in a session, which the
	// agent's next prompt continues (Tapestry's task prompts and
	// continuation prompts); nil starts each prompt afresh.
	History func(ctx context.Context, session, agent string) ([]plugins.ChatMessage, error)
	// Pool, when set, gives a run with workers its workers from its local
	// ones: a run coordinated over NATS offers each task to every worker
	// on the bus, these local ones included (host/remote). repo is the
	// run's own: git work on one repository from one process goes through
	// one Repo, which keeps what must not run at once apart (a fetch and
	// a worktree being added). nil keeps the local workers.
	Pool func(ctx context.Context, plan string, repo *gitwork.Repo, local []Worker) ([]Worker, error)
	// Budget keeps the run's spending against its budgets (budget.go);
	// nil: none are kept.
	Budget *budget.Ledger
}

// Result is what a start-work run did.
type Result struct {
	Status     Status
	Resolution plans.Resolution
	// Plan is the plan that ran, as last read.
	Plan *plans.Plan
	// Report is the plan's validation report (errors block a start).
	Report plans.Report
	// Err says why a run failed or paused.
	Err error
	// Review holds the verdicts on a finished plan's work, when it was
	// reviewed; nil otherwise.
	Review *Reviewed
	// Merge, after a run with workers finished its plan, says for the
	// person where the work is: how to merge the integration branch, or
	// that the branch the run started from was fast-forwarded to it.
	Merge string
}

// StartWork runs the start-work journey: it takes the project lock, resolves
// and validates the plan, records the work state, and executes the plan's
// unchecked tasks one by one, ticking each as it is verified. Cancelling ctx
// pauses the run: the running block's process group is stopped, state.json
// says paused, and the next run resumes at the first unchecked task.
//
// A returned error means the run could not be attempted (the lock is held,
// the plans directory is missing); how an attempted run ended is in the
// Result.
func StartWork(ctx context.Context, o Options) (Result, error) {
	r := &runner{o: o, store: plans.ProjectStore(o.Project)}
	if r.o.Now == nil {
		r.o.Now = time.Now
	}
	if r.o.Observe == nil {
		r.o.Observe = func(Event) {}
	}
	if r.o.Config == nil {
		r.o.Config = config.Default()
	}
	if r.o.Logger == nil {
		r.o.Logger = slog.New(slog.DiscardHandler)
	}
	if r.o.Agent == nil {
		r.o.Agent = agents.NewTapestryAgent()
	}
	r.session = r.o.Session
	if r.session == "" {
		r.session = NewSessionID(r.o.Now())
	}
	r.tools = r.o.Tools
	if r.tools == nil {
		gate, err := tools.NewGate(r.o.Config, r.o.Logger)
		if err != nil {
			return Result{}, err
		}
		logger := r.o.Logger
		if r.tools, err = tools.New(o.Project, r.o.Config, gate, r.o.Hooks, tools.WithLogger(logger), tools.WithEventFunc(func(ev plugins.Event) {
			logger.Warn("tool call denied", "agent", ev.Agent, "tool", ev.Tool, "data", ev.Data)
		})); err != nil {
			return Result{}, err
		}
	}
	release, err := r.store.Lock()
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = release() }()
	defer r.closeLogs()
	// state.json is saved once per task: the file of each save is made
	// while the task before runs.
	defer r.store.WriteAhead()()
	// A run killed outright may have left its block or a hook running;
	// they end before anything runs again, the task in flight above all.
	r.reapLeftovers()
	if r.o.ServeAgents != nil {
		stop, err := r.o.ServeAgents(ctx, r.session)
		if err != nil {
			return Result{}, err
		}
		defer func() { _ = stop() }()
	}
	return r.run(ctx)
}

type runner struct {
	o       Options
	store   *plans.Store
	tools   *tools.Tools
	session string
	st      *plans.State
	res     Result
	// plan names the plan in events once it is known.
	plan string
	// resumes is the last session of the plan this run resumes, whose
	// conversation the agent continues.
	resumes string
	// money keeps the spending on disk between saves (budget.go).
	money *runMoney
	// forModel holds what hooks said for the model (plan.task.done and
	// plan.todos.done context): it goes with the agent's next prompt, never
	// to the screen.
	forModel []string
	// git is what checkWorkers found of the project's repository, which a
	// run with workers goes on from (parallel.go).
	git *gitFound
	// logs opens the tasks' logs through the project's directory held
	// open for the run (loneLog); nil until the first task.
	logs *logfile.Logs
}

// warn shows a problem that does not stop the run (a corrupt state.json
// moved aside, a validation warning).
func (r *runner) warn(msg string) {
	r.o.Observe(Event{Type: EventWarning, Time: r.o.Now(), Plan: r.plan, Reason: msg})
}

func (r *runner) run(ctx context.Context) (Result, error) {
	st, warning, err := r.store.Load()
	if err != nil {
		return Result{}, err
	}
	if warning != "" {
		r.warn(warning)
	}
	if st, err = r.settle(ctx, st); err != nil {
		return Result{}, err
	}
	// The plan is resolved once; the hooks see the command with that
	// resolution, and a user's hook may refuse the start, or point it at
	// another plan by setting plan_name.
	name := r.o.Name
	res, err := plans.Resolve(ctx, r.o.Project, name, st)
	if err != nil {
		return Result{}, err
	}
	out := r.fire(ctx, plugins.Event{Name: plugins.EventCommandExecuteBefore, Command: hooks.CommandStartWork, Arguments: name,
		Data: map[string]any{hooks.ResolutionKey: hooks.NewResolution(res)}})
	if out.Blocked() {
		r.res.Status, r.res.Err = StatusBlocked, fmt.Errorf("start-work blocked by %s", out.Reason)
		return r.res, nil
	}
	if n, ok := out.Args["plan_name"].(string); ok && n != "" && (res.Plan == nil || !strings.EqualFold(n, res.Plan.Name)) {
		if res, err = plans.Resolve(ctx, r.o.Project, n, st); err != nil {
			return Result{}, err
		}
	}
	r.res.Resolution = res
	switch res.Verdict {
	case plans.VerdictComplete, plans.VerdictAllComplete:
		r.res.Status, r.res.Plan = StatusComplete, res.Plan
		return r.res, nil
	case plans.VerdictNotFound:
		r.res.Status = StatusNotFound
		return r.res, nil
	case plans.VerdictChoose:
		r.res.Status = StatusChoose
		return r.res, nil
	case plans.VerdictNone:
		r.res.Status = StatusNone
		return r.res, nil
	}
	p := res.Plan
	r.res.Plan, r.plan = p, p.Name
	r.res.Report = plans.Validate(r.o.Project, p)
	if !r.res.Report.OK() {
		r.res.Status = StatusInvalid
		return r.res, nil
	}
	if r.workers() > 1 {
		if err := r.checkWorkers(ctx, p); err != nil {
			return Result{}, err
		}
	}
	r.warmAgents(p)
	// Template warnings, in line order, once per change of what they say.
	warnings := slices.Clone(r.res.Report.Warnings)
	slices.SortStableFunc(warnings, func(a, b plans.Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), strings.Compare(a.Msg, b.Msg))
	})
	texts := make([]string, len(warnings))
	for i, w := range warnings {
		texts[i] = problemText(p, w)
	}
	digest := warningsDigest(texts)
	if abs, err := filepath.Abs(p.Path); r.o.Verbose || st == nil || err != nil || !st.IsActive(abs) || st.Warned != digest {
		for _, t := range texts {
			r.warn(t)
		}
	}

	resumed := res.Verdict == plans.VerdictResume && st != nil
	if resumed {
		r.st = st
		if n := len(st.SessionIDs); n > 0 {
			r.resumes = st.SessionIDs[n-1]
		}
		if st.InFlight != nil {
			r.warn(fmt.Sprintf("the last run stopped during task %s; it runs again", st.InFlight.Label()))
		}
	} else {
		abs, err := filepath.Abs(p.Path)
		if err != nil {
			return Result{}, fmt.Errorf("resolve plan path: %w", err)
		}
		r.st = plans.NewState(abs, p.Name, agents.Tapestry, plans.GitHead(r.o.Project), r.o.Now())
	}
	r.st.Resume(r.session)
	r.st.Warned = digest
	defer r.budgetStart(p)()
	pr := p.Progress()
	r.o.Observe(Event{Type: EventPlanStarted, Time: r.o.Now(), Plan: p.Name, Completed: pr.Completed, Total: pr.Total, Resumed: resumed, Workers: r.eventWorkers()})
	// What SessionStart hooks add (a Claude hook's additionalContext or
	// plain stdout) goes with the model's first prompt of the run.
	r.forModel = append(r.forModel, r.fire(ctx, plugins.Event{Name: plugins.EventSessionStart, Plan: p.Name}).Context...)
	res2, err := r.execute(ctx, p)
	reason := string(res2.Status)
	r.fire(context.WithoutCancel(ctx), plugins.Event{Name: plugins.EventSessionEnd, Plan: p.Name, Data: map[string]any{"reason": reason}})
	return res2, err
}

// fire runs the hooks of one event of this run and reports what they had to
// say; a hook's failure is logged, never fatal to the run.
func (r *runner) fire(ctx context.Context, ev plugins.Event) hooks.Outcome {
	if r.o.Hooks == nil {
		return hooks.Outcome{Action: plugins.Allow}
	}
	ev.SessionID, ev.Agent, ev.Cwd, ev.Time = r.session, agents.Tapestry, r.o.Project, r.o.Now()
	out, err := r.o.Hooks.Run(ctx, ev)
	if err != nil {
		r.o.Logger.Warn("hooks failed", "event", ev.Name, "err", err)
	}
	for _, rep := range out.Reports {
		if rep.Error != "" {
			r.o.Logger.Warn("hook failed", "event", ev.Name, "hook", rep.Hook, "err", rep.Error, "policy", rep.Policy)
		}
	}
	return out
}

// warmAgents has the agents the plan's open tasks need started in the
// background (Options.Warm): Tapestry, or a category's Shuttle, for a task
// only a model can do. Runbook tasks run in this process, so a plan of them
// starts no agent at all.
func (r *runner) warmAgents(p *plans.Plan) {
	if r.o.Warm == nil {
		return
	}
	var roles []string
	for _, t := range p.Tasks {
		if t.Done || agents.RunsAsRunbook(t) {
			continue
		}
		if role, _ := r.taskAgent(t); !slices.Contains(roles, role) {
			roles = append(roles, role)
		}
	}
	if len(roles) > 0 {
		r.o.Warm(roles...)
	}
}

// settle finishes the bookkeeping of an earlier run that died after its last
// tick: a state whose plan is complete, or gone, is cleared, and the
// worktrees of a complete plan's workers removed.
func (r *runner) settle(ctx context.Context, st *plans.State) (*plans.State, error) {
	if st == nil || st.ActivePlan == "" {
		return st, nil
	}
	p, err := plans.Load(st.ActivePlan)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.warn(fmt.Sprintf("the active plan %s no longer exists; its work state is cleared", st.ActivePlan))
	case err != nil:
		return st, nil
	case !p.Progress().Complete():
		return st, nil
	case st.Integration != nil:
		// A run with workers killed after its last tick, before it
		// removed its worktrees: nothing would ever reuse them now.
		if repo, err := gitwork.Open(ctx, r.o.Project); err == nil {
			dir := filepath.Join(layout.NewProject(r.o.Project).Dir(), "worktrees", branchSafe(p.Name))
			cleanFinished(ctx, repo, dir, IntegrationBranch(p.Name), r.o.Logger)
		}
	}
	if err := r.store.Clear(); err != nil {
		return nil, fmt.Errorf("clear work state: %w", err)
	}
	return nil, nil
}

func (r *runner) execute(ctx context.Context, p *plans.Plan) (Result, error) {
	// The run owns the plan's checkboxes from here to its end: only the
	// tick door changes one (see tools.Tools.OwnTicks).
	release := r.tools.OwnTicks(p)
	defer release()
	if r.workers() > 1 {
		return r.parallel(ctx, p)
	}
	// The run's own record of its tasks: it is done only when each of them
	// is still in the plan, ticked (see unfinished).
	started := p
	for {
		var err error
		if p, err = r.current(p); err != nil {
			return r.fail(p, nil, err)
		}
		r.res.Plan = p
		t, ok := r.next(p)
		if !ok {
			if left := r.skippedLeft(p); len(left) > 0 {
				return r.pause(p, fmt.Sprintf("only tasks left for a person remain (%s); tick each with `weave task done %s N` once done", strings.Join(left, ", "), p.Name))
			}
			if gone := plans.MissingTasks(started, p); len(gone) > 0 {
				return r.fail(p, nil, &plans.RemovedError{Plan: p.Name, Tasks: gone})
			}
			return r.done(ctx, p)
		}
		if ctx.Err() != nil {
			return r.pause(p, "interrupted")
		}
		if herr := r.halted(); herr != nil {
			return r.fail(p, nil, herr)
		}
		next, err := r.runTask(ctx, p, t)
		if err != nil || next == nil {
			return r.res, err
		}
		p = next
	}
}

// runTask runs one task with its retries. It returns the re-read plan to go
// on with, or nil when the run ended (r.res says how).
func (r *runner) runTask(ctx context.Context, p *plans.Plan, t plans.Task) (*plans.Plan, error) {
	logPath := r.logPath(p, t)
	for attempt := 1; ; attempt++ {
		r.st.Begin(t, r.o.Now())
		if err := r.save(); err != nil {
			return nil, err
		}
		pr := p.Progress()
		base := Event{Plan: p.Name, Task: taskNumber(t), Title: t.Title, Verification: t.Verification, Completed: pr.Completed, Total: pr.Total, Attempt: attempt}
		ev := base
		ev.Type, ev.Time, ev.Log = EventTaskStarted, r.o.Now(), relTo(r.o.Project, logPath)
		r.o.Observe(ev)

		start := r.o.Now()
		r.budgetTask(t)
		err := r.runLogged(ctx, p, t, base, logPath, attempt)
		elapsed := r.o.Now().Sub(start).Milliseconds()

		if ctx.Err() != nil {
			// An interrupted attempt is not a failure of the task.
			r.st.Withdraw(t)
			return nil, r.pauseErr(p, "interrupted")
		}
		if be := r.overBudget(err); be != nil {
			return nil, r.budgetPause(p, t, be)
		}
		var pe *pauseError
		if errors.As(err, &pe) {
			r.st.Withdraw(t)
			return nil, r.pauseErr(p, pe.reason)
		}
		if err == nil {
			np, ok, terr := r.confirmTick(p, t)
			if terr != nil {
				return nil, r.failErr(p, &t, terr)
			}
			if !ok {
				return nil, r.failErr(np, nil, &plans.RemovedError{Plan: np.Name, Tasks: []plans.Task{t}})
			}
			// This state reaches disk with the next task's start, so that a
			// task costs two durable writes: state before, checkbox after.
			r.st.Finish(t)
			npr := np.Progress()
			ev := base
			ev.Type, ev.Time, ev.Completed, ev.Total, ev.ElapsedMS = EventTaskDone, r.o.Now(), npr.Completed, npr.Total, elapsed
			ev.CostUSD = r.taskCost(t)
			r.o.Observe(ev)
			out := r.fire(ctx, plugins.Event{Name: plugins.EventPlanTaskDone, Plan: np.Name,
				Task: &plugins.TaskRef{Number: t.Number, Title: t.Title}, Data: map[string]any{"completed": npr.Completed, "total": npr.Total}})
			// What hooks add here is written for the model (the
			// verification reminder): it goes with Tapestry's next prompt,
			// and to the log, never to the person's screen.
			for _, c := range out.Context {
				r.o.Logger.Debug("hook context for the model", "event", plugins.EventPlanTaskDone, "text", c)
			}
			r.forModel = append(r.forModel, out.Context...)
			if !t.Verification {
				r.todosDone(ctx, np)
			}
			return np, nil
		}
		if np, gone := r.removed(p, t); gone != nil {
			return nil, r.failErr(np, nil, gone)
		}

		if herr := r.halted(); herr != nil {
			// A guard failed: no retry goes past it.
			err = herr
		}
		r.st.Failed(t, err)
		// A hook's block is a decision: trying again asks the same question.
		var blocked *agents.HookBlockError
		retry := attempt <= r.o.Config.Runbook.Retries && !errors.Is(err, agents.ErrNeedsModel) && !errors.As(err, &blocked) && r.halted() == nil
		ev = base
		ev.Type, ev.Time, ev.Error, ev.Retry, ev.ElapsedMS = EventTaskFailed, r.o.Now(), err.Error(), retry, elapsed
		r.o.Observe(ev)
		if !retry {
			return nil, r.failErr(p, &t, err)
		}
		// Back off before the next attempt, so that a task failing at once
		// does not spin; Ctrl-C during the wait pauses as during a task.
		if serr := r.sleep(ctx, RetryBackoff(attempt)); serr != nil || ctx.Err() != nil {
			return nil, r.pauseErr(p, "interrupted")
		}
	}
}

// The backoff between the attempts of a failing task: retryBackoffMin after
// the first failure, doubling up to retryBackoffMax.
const (
	retryBackoffMin = 250 * time.Millisecond
	retryBackoffMax = 10 * time.Second
)

// RetryBackoff is the wait after the attempt-th failed attempt of a task.
func RetryBackoff(attempt int) time.Duration {
	d := retryBackoffMin
	for i := 1; i < attempt && d < retryBackoffMax; i++ {
		d *= 2
	}
	return min(d, retryBackoffMax)
}

func (r *runner) sleep(ctx context.Context, d time.Duration) error {
	if r.o.Sleep != nil {
		return r.o.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxIdleNudges is the host's own bound on continuation prompts within one
// attempt, whatever the hooks say, so that a run never loops.
const maxIdleNudges = 20

// pauseError is a hook's decision to pause the plan (work-continuation
// stopping after nudges without progress).
type pauseError struct{ reason string }

func (e *pauseError) Error() string { return "paused: " + e.reason }

// maxTaskLog is the size at which a task's log rotates (one older file is
// kept) when config runbook.max_log_bytes does not say.
const maxTaskLog = 10 << 20

// runLogged has the agent carry out the task, with the output of its
// commands going to the observer, one event per line, and to the task's log.
func (r *runner) runLogged(ctx context.Context, p *plans.Plan, t plans.Task, base Event, logPath string, attempt int) error {
	var log io.Writer
	// A task's log is bounded like the host's: a command that prints
	// without end rotates it instead of filling the disk, and a link
	// planted in its place, or a logs directory linked out of the project,
	// is not written through.
	if f, err := r.loneLog(logPath); err == nil {
		defer f.Close()
		fmt.Fprintf(f, "=== %s attempt %d: %s\n", r.o.Now().UTC().Format(time.RFC3339), attempt, t.Label())
		log = f
	}
	if log == nil {
		r.warn(fmt.Sprintf("cannot write the log %s; output goes to the terminal only", logPath))
	}
	w := &lineEmitter{log: log, emit: func(line string) {
		ev := base
		ev.Type, ev.Time, ev.Output = EventTaskOutput, r.o.Now(), line
		r.o.Observe(ev)
	}}
	defer w.flush()
	err := r.converse(ctx, p, t, w)
	if err != nil && log != nil {
		w.flush()
		fmt.Fprintf(log, "=== failed: %v\n", err)
	}
	return err
}

// loneLog opens the log of a task at logPath, bounded by
// runbook.max_log_bytes (one older file kept once it rotates).
func (r *runner) loneLog(logPath string) (*logfile.File, error) {
	size := int64(cmp.Or(r.o.Config.Runbook.MaxLogBytes, maxTaskLog))
	if r.logs == nil {
		logs, err := logfile.OpenLogs(r.o.Project)
		if err != nil {
			return logfile.Open(r.o.Project, logPath, size, 1)
		}
		r.logs = logs
	}
	return r.logs.Open(logPath, size, 1)
}

// closeLogs lets go of what loneLog holds.
func (r *runner) closeLogs() {
	if r.logs != nil {
		_ = r.logs.Close()
	}
}

// services is what the agent reaches while it carries out a task: the tools,
// as role (Tapestry, or the agent Route chose), through the capability gate
// and the tool hooks, with command output streamed to out,
// runbook.block_timeout as a command's limit, and handed the task its
// plan_check may tick.
func (r *runner) services(role string, out io.Writer, handed *tools.Handed) *tools.Services {
	scope := tools.Scope{Output: out, Timeout: r.o.Config.Runbook.BlockTimeout, TimeoutSet: true, Handed: handed}
	return r.tools.Services(tools.Caller{Agent: role}, r.session, scope, r.o.Logger.With("agent", role))
}

// confirmTick makes sure the task the agent finished is ticked in the file,
// through the tick door: the agent ticks it with plan_check, which runs its
// verify blocks first, and the host checks, once the marks that changed
// without the door are put back. It returns the plan as it now is, and
// false when the task is no longer in it.
func (r *runner) confirmTick(p *plans.Plan, t plans.Task) (*plans.Plan, bool, error) {
	np, err := r.current(p)
	if err != nil {
		return nil, false, err
	}
	cur, ok := np.Lookup(t)
	if !ok {
		return np, false, nil
	}
	if !cur.Done {
		return nil, false, fmt.Errorf("task %s is not ticked: ticks go through plan_check, which runs the task's verify blocks", t.Label())
	}
	return np, true, nil
}

// current is the plan as the file now has it, its checkboxes as the tick
// door left them (see tools.Tools.KeepTicks): progress is taken from no
// other. The marks and tasks put back since the last look are shown as
// warnings; a *plans.RemovedError says tasks left it for good.
func (r *runner) current(p *plans.Plan) (*plans.Plan, error) {
	np, notices, err := r.tools.KeepTicks(p)
	for _, n := range notices {
		r.warn(n)
	}
	var gone *plans.RemovedError
	if err != nil && !errors.As(err, &gone) {
		err = fmt.Errorf("re-read plan: %w", err)
	}
	return np, err
}

// todosDone fires plan.todos.done once the task just ticked left no task of
// the plan's TODOs open: the plan's work is done, and its Verification
// checklist (data.verification items open) comes next. Hooks that only act
// at that point (the verification reminder) are then called once a plan,
// not on every task.
func (r *runner) todosDone(ctx context.Context, p *plans.Plan) {
	todos, verify := 0, 0
	for _, t := range p.Tasks {
		switch {
		case !t.Verification && !t.Done:
			return
		case !t.Verification:
			todos++
		case !t.Done:
			verify++
		}
	}
	pr := p.Progress()
	out := r.fire(ctx, plugins.Event{Name: plugins.EventPlanTodosDone, Plan: p.Name,
		Data: map[string]any{"completed": pr.Completed, "total": pr.Total, "todos": todos, "verification": verify}})
	for _, c := range out.Context {
		r.o.Logger.Debug("hook context for the model", "event", plugins.EventPlanTodosDone, "text", c)
	}
	r.forModel = append(r.forModel, out.Context...)
}

// removed says whether tasks are gone from the plan for good after task t
// failed (t itself, or others the run could not put back), and reads the
// plan again.
func (r *runner) removed(p *plans.Plan, t plans.Task) (*plans.Plan, *plans.RemovedError) {
	np, err := r.current(p)
	var gone *plans.RemovedError
	if errors.As(err, &gone) {
		return p, gone
	}
	if err != nil {
		return p, nil
	}
	if _, ok := np.Lookup(t); ok {
		return np, nil
	}
	return np, &plans.RemovedError{Plan: np.Name, Tasks: []plans.Task{t}}
}

func (r *runner) save() error {
	defer r.holdSpending()()
	if err := r.store.Save(r.st); err != nil {
		return fmt.Errorf("write work state: %w", err)
	}
	return nil
}

func (r *runner) done(ctx context.Context, p *plans.Plan) (Result, error) {
	pr := p.Progress()
	r.o.Observe(Event{Type: EventPlanDone, Time: r.o.Now(), Plan: p.Name, Completed: pr.Completed, Total: pr.Total})
	// A finished plan leaves no work state behind, as the spec's lifecycle
	// says; its checkboxes are the record.
	if err := r.store.Clear(); err != nil {
		return Result{}, fmt.Errorf("clear work state: %w", err)
	}
	r.res.Status, r.res.Plan = StatusDone, p
	r.review(ctx, p)
	return r.res, nil
}

func (r *runner) pause(p *plans.Plan, reason string) (Result, error) {
	err := r.pauseErr(p, reason)
	return r.res, err
}

func (r *runner) pauseErr(p *plans.Plan, reason string) error {
	r.st.Pause(reason)
	r.res.Status = StatusPaused
	r.res.Err = errors.New(reason)
	pr := p.Progress()
	r.o.Observe(Event{Type: EventPlanPaused, Time: r.o.Now(), Plan: p.Name, Completed: pr.Completed, Total: pr.Total, Reason: reason})
	r.notifyPaused(p, reason)
	return r.save()
}

// notifyPaused tells the notification hooks (Claude Code's Notification)
// that a person is needed: the plan paused. They run even when the pause
// comes from Ctrl-C, each within its own timeout.
func (r *runner) notifyPaused(p *plans.Plan, reason string) {
	name := ""
	if p != nil {
		name = p.Name
	}
	r.fire(context.Background(), hooks.NotificationEvent(hooks.NotifyPlanPaused, fmt.Sprintf("plan %s paused: %s", name, reason)))
}

func (r *runner) fail(p *plans.Plan, t *plans.Task, err error) (Result, error) {
	ferr := r.failErr(p, t, err)
	return r.res, ferr
}

// failErr pauses the plan after a task failed for good, keeping the error in
// state.json and on screen.
func (r *runner) failErr(p *plans.Plan, t *plans.Task, err error) error {
	var blocked *agents.HookBlockError
	switch {
	case t != nil && errors.As(err, &blocked):
		err = fmt.Errorf("task %s %w", t.Label(), err)
	case t != nil:
		err = fmt.Errorf("task %s failed: %w", t.Label(), err)
	}
	reason := err.Error()
	r.st.Fail(reason)
	r.res.Status = StatusFailed
	r.res.Err = err
	ev := Event{Type: EventPlanPaused, Time: r.o.Now(), Reason: reason}
	if p != nil {
		pr := p.Progress()
		ev.Plan, ev.Completed, ev.Total = p.Name, pr.Completed, pr.Total
	}
	if t != nil {
		ev.Task, ev.Title = taskNumber(*t), t.Title
	}
	r.o.Observe(ev)
	r.notifyPaused(p, reason)
	return r.save()
}

func (r *runner) logPath(p *plans.Plan, t plans.Task) string {
	return filepath.Join(layout.NewProject(r.o.Project).PlanLogs(p.Name), logName(t)+".log")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func logName(t plans.Task) string {
	slug := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(t.Title), "-"), "-.")
	if len(slug) > 48 {
		slug = strings.TrimRight(slug[:48], "-.")
	}
	n := taskNumber(t)
	if slug == "" {
		return fmt.Sprintf("%03d", n)
	}
	return fmt.Sprintf("%03d-%s", n, slug)
}

func taskNumber(t plans.Task) int { return t.Ordinal() }

func problemText(p *plans.Plan, pr plans.Problem) string {
	if pr.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", relPlan(p), pr.Line, pr.Msg)
	}
	return fmt.Sprintf("%s: %s", relPlan(p), pr.Msg)
}

func relPlan(p *plans.Plan) string {
	return filepath.Join(layout.DirName, "plans", filepath.Base(p.Path))
}

func relTo(base, path string) string {
	if rel, err := filepath.Rel(base, path); err == nil {
		return rel
	}
	return path
}

// NewSessionID returns a new session ID, stamped with now.
func NewSessionID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("ses_%s_%s", now.UTC().Format("20060102T150405"), hex.EncodeToString(b[:]))
}

// reapLeftovers ends the process groups that a host killed outright left
// running (recorded in .weave/run/), saying so.
func (r *runner) reapLeftovers() {
	reaped, err := proc.NewLedger(r.o.Project, layout.NewProject(r.o.Project).Run()).Reap()
	if err != nil {
		r.o.Logger.Warn("end what the last run left running", "err", err)
	}
	for _, g := range reaped {
		switch {
		case g.Err != nil:
			r.o.Logger.Warn("process group left by the last run not ended", "pgid", g.PGID, "what", g.What, "err", g.Err)
		case g.Killed > 0:
			r.o.Logger.Info("ended a process group the last run left running", "pgid", g.PGID, "what", g.What, "processes", g.Killed)
			r.warn(fmt.Sprintf("ended %d process(es) the last run left running (%s)", g.Killed, g.What))
		}
	}
}

// halted says why the run must stop now, if it must.
func (r *runner) halted() error {
	if r.o.Halted == nil {
		return nil
	}
	return r.o.Halted()
}

// warningsDigest names a set of warnings, so that a run can tell whether the
// last one showed the same.
func warningsDigest(texts []string) string {
	if len(texts) == 0 {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join(texts, "\n")))
	return hex.EncodeToString(sum[:8])
}

// next is the first unchecked task the run does not skip: the TODOs, then
// the Verification checklist.
func (r *runner) next(p *plans.Plan) (plans.Task, bool) {
	return p.NextExcept(func(t plans.Task) bool { return slices.Contains(r.o.Skip, taskNumber(t)) })
}

// skippedLeft lists the unchecked tasks the run skipped, and records them
// as skipped in the state.
func (r *runner) skippedLeft(p *plans.Plan) []string {
	var out []string
	for _, t := range p.Tasks {
		if !t.Done && slices.Contains(r.o.Skip, taskNumber(t)) {
			out = append(out, "task "+t.Label())
			r.st.Record(t.Key()).Skipped = true
		}
	}
	return out
}
