package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// localWorker is a worker slot of this process: a worktree of the project
// (.weave/worktrees/<plan>/w<i>), reused task after task, and tools rooted
// there, so that the capability gate and the sandbox confine its runbook
// blocks' and its agent's tool calls to it. Its plan_check claims instead
// of ticking; it ends a task by committing the worktree with the task's
// trailers.
type localWorker struct {
	index    int
	dir, rel string
	repo     *gitwork.Repo
	// main are the run's tools, which the worker's are made from (same
	// gate, hooks, config, model); tools are the worker's, once its
	// worktree exists.
	main, tools *tools.Tools
	cfg         *config.Config
	logger      *slog.Logger
	agentFor    func(plans.Task) (string, plugins.Agent)
	// gitDir is the worktree's git directory as the host made it.
	gitDir string
	// prepare, when set, readies the worktree once it holds the task's
	// base, before anything runs there (a handed task's drops the
	// coordinator's .weave/, handed.go).
	prepare func() error
	// keep are the untracked files of the worktree (slash-separated,
	// relative to it) its reset leaves in place, for prepare checks them
	// and writes them again only when they differ: creating a file costs
	// more than reading it.
	keep []string
	// progress, when set, reads a plan's progress instead of the main
	// tools (a handed task's plan is the one the coordinator sent).
	progress func(plan string) (plugins.PlanProgress, error)
	// toolsAt, when set, has the worker's tools made anew for each task,
	// once its worktree is prepared, with the options it gives (a handed
	// task's skills and instructions are those of the code it works on).
	toolsAt func() []tools.Option
	// remind, when set, is what hooks said for the model before the task
	// (a handed task's session.start): it goes with the agent's prompt.
	remind []string
	// checked says the worktree was last seen as the host made it (its
	// git directory its own, onBranch) when the last task in it ended,
	// and nothing runs in a worktree between its tasks (a block's
	// processes end with the block): the next task resets it without
	// asking git again whether it is one.
	checked bool
}

func (w *localWorker) Name() string { return strconv.Itoa(w.index) }

// Run implements Worker.
func (w *localWorker) Run(ctx context.Context, a Assignment, out io.Writer) (Outcome, error) {
	reset := w.repo.Worktree
	if w.checked {
		reset = func(ctx context.Context, dir, branch, base string) error {
			return w.repo.ResetWorktreeKeeping(ctx, dir, branch, base, w.keep)
		}
	}
	// Whatever happens to this task, the next one checks again unless
	// this one ends checked.
	w.checked = false
	if err := reset(ctx, w.dir, a.Branch, a.Base); err != nil {
		return Outcome{}, err
	}
	if w.prepare != nil {
		if err := w.prepare(); err != nil {
			return Outcome{}, err
		}
	}
	if w.gitDir == "" {
		g, err := w.repo.GitDir(ctx, w.dir)
		if err != nil {
			return Outcome{}, err
		}
		w.gitDir = g
	}
	if w.tools == nil || w.toolsAt != nil {
		var opts []tools.Option
		if w.toolsAt != nil {
			opts = w.toolsAt()
		}
		wt, err := w.main.At(w.dir, opts...)
		if err != nil {
			return Outcome{}, err
		}
		w.tools = wt
	}
	t := a.Task
	role, agent := w.agentFor(t)
	var claimed atomic.Bool
	runbook := agents.RunsAsRunbook(t)
	handed := &tools.Handed{Plan: a.Plan.Name, Task: t, Runbook: runbook, Claim: func() { claimed.Store(true) }}
	s := w.services(ctx, role, a, out, handed)
	if runbook {
		resp, err := agents.RunTask(ctx, s, a.Plan.Name, t)
		switch {
		case err != nil:
			return Outcome{}, fmt.Errorf("%s: %w", role, err)
		case resp.Error != "":
			return Outcome{}, agents.ResponseError(resp)
		}
	} else {
		if agent == nil {
			return Outcome{}, fmt.Errorf("%s: no agent", role)
		}
		req := agents.TaskRequest(a.Session, a.Plan, t)
		if len(w.remind) > 0 {
			req.Prompt += "\n\n<system-reminder>\n" + strings.Join(w.remind, "\n\n") + "\n</system-reminder>"
		}
		resp, err := agent.Handle(ctx, s, req)
		switch {
		case err != nil:
			return Outcome{}, fmt.Errorf("%s: %w", role, err)
		case resp.Error != "":
			return Outcome{}, agents.ResponseError(resp)
		case !claimed.Load():
			return Outcome{}, errors.New(role + " stopped without plan_check passing the task's verify blocks")
		}
	}
	if !claimed.Load() {
		return Outcome{}, errors.New("the task did not pass plan_check")
	}
	if ctx.Err() != nil {
		return Outcome{}, ctx.Err()
	}
	if err := w.onBranch(ctx, a); err != nil {
		return Outcome{}, err
	}
	sha, err := w.repo.Commit(ctx, w.dir, t.Title, []gitwork.Trailer{
		{Key: gitwork.TrailerPlan, Value: a.Plan.Name},
		{Key: gitwork.TrailerTask, Value: strconv.Itoa(t.Ordinal())},
		{Key: gitwork.TrailerSession, Value: a.Session},
		{Key: gitwork.TrailerAttempt, Value: a.AttemptID},
	})
	if err != nil {
		return Outcome{}, err
	}
	w.checked = true
	return Outcome{Commit: sha, Worktree: w.rel}, nil
}

// onBranch makes sure the task's work is committed where it belongs, as one
// commit on its branch whose parent is the assignment's base, whatever the
// task did to the worktree's git: a runbook block that committed, or
// switched branches, has its work folded into the one commit; a worktree
// whose .git was rewritten to point at another repository (the main tree's,
// say) is refused, never committed in.
func (w *localWorker) onBranch(ctx context.Context, a Assignment) error {
	// Most tasks leave git as they found it, which git's own files tell
	// without a process; anything else is asked of git below.
	if w.repo.OnBranch(ctx, w.dir, w.gitDir, a.Branch, a.Base) {
		return nil
	}
	out, err := w.repo.Git(ctx, w.dir, "rev-parse", "--absolute-git-dir", "HEAD", "--symbolic-full-name", "HEAD")
	if err != nil {
		return fmt.Errorf("the worktree %s is no longer one: %w", w.rel, err)
	}
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != w.gitDir {
		return fmt.Errorf("the worktree %s no longer points at its own git directory (%s): the task's work is not committed", w.rel, strings.Join(f, " "))
	}
	if len(f) != 3 || f[2] != "refs/heads/"+a.Branch {
		if _, err := w.repo.Git(ctx, w.dir, "symbolic-ref", "HEAD", "refs/heads/"+a.Branch); err != nil {
			return err
		}
	}
	if f[1] != a.Base {
		if _, err := w.repo.Git(ctx, w.dir, "reset", "-q", "--soft", a.Base); err != nil {
			return fmt.Errorf("fold the task's commits into one: %w", err)
		}
	}
	return nil
}

// services are the host services of the worker's agent: its tool calls go
// through the worker's tools, as role, handed the task; progress is read
// from the project's plan, which only the coordinator ticks. Its model calls
// carry the task's budget that ctx, the task's, carries: an agent's call
// comes back through the host in a context of its own.
func (w *localWorker) services(ctx context.Context, role string, a Assignment, out io.Writer, handed *tools.Handed) *tools.Services {
	scope := tools.Scope{Output: out, Timeout: w.cfg.Runbook.BlockTimeout, TimeoutSet: true, Handed: handed}
	s := w.tools.Services(tools.Caller{Agent: role}, a.Session, scope, w.logger.With("agent", role, "worker", w.index))
	progress := w.main.Progress
	if w.progress != nil {
		progress = w.progress
	}
	s.ProgressFunc = func(_ context.Context, plan string) (plugins.PlanProgress, error) { return progress(plan) }
	s.TickFunc = func(ctx context.Context, plan string, task plugins.TaskRef) (plugins.PlanProgress, error) {
		ref := any(task.Title)
		if task.Number > 0 {
			ref = task.Number
		}
		res, err := s.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolPlanCheck, Args: map[string]any{"plan": plan, "task": ref}})
		if err != nil {
			return plugins.PlanProgress{}, err
		}
		if res.IsError {
			return plugins.PlanProgress{}, errors.New(res.Output)
		}
		return progress(plan)
	}
	task := ctx
	if complete := s.ModelFunc; complete != nil {
		s.ModelFunc = func(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
			return complete(budget.Carry(tools.WithMessageSource(ctx, SourceStartWork), task), req)
		}
	}
	// A delegation's model calls are the task's too (tools.Delegator).
	if call := s.ToolFunc; call != nil {
		s.ToolFunc = func(ctx context.Context, c plugins.ToolCall) (plugins.ToolResult, error) {
			return call(budget.Carry(ctx, task), c)
		}
	}
	return s
}

var _ Worker = (*localWorker)(nil)
