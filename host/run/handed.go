package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/instructions"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// A handed task is one a coordinator elsewhere gave this process (`weave
// worker`, over NATS). The process loads its host once, from its own
// project and config, and runs each task handed to it the way a local
// worker of a run with workers runs one (localworker.go): in a worktree of
// its own, with tools rooted there (tools.At: the same gate, hooks,
// sandbox, permission rules and model), a plan_check that only claims, and
// one commit with the task's trailers. The tasks it runs at once share the
// host and its plugins. Its agents are told what the task's code says
// (its instruction files and skills, Guide), and its hooks hear the task's
// session start and end (handedsession.go).

// HandedHost is what a worker process loaded once for every task handed to
// it: its project's config and tools, its agents, its log and budgets.
type HandedHost struct {
	// Config is the worker's own config, never the one a coordinator's
	// code carries.
	Config *config.Config
	// Tools are the worker project's tools; each task's are made from them
	// at its worktree.
	Tools *tools.Tools
	// Agent carries out the tasks that are not runbooks (Tapestry); Route,
	// when set, gives some to another agent (a category's Shuttle).
	Agent plugins.Agent
	Route Router
	// Logger is the host log; nil discards it.
	Logger *slog.Logger
	// Budget keeps what the tasks' model calls cost; nil: none are kept.
	Budget *budget.Ledger
	// Halted, when set, says why no task may go on (a hook whose failure
	// policy is closed failed).
	Halted func() error
	// Hooks, when set, hear each task's session start and end on this
	// worker (the tool events reach them through Tools).
	Hooks *hooks.Pipeline
	// Guide, when set, reads what the code in a task's worktree tells the
	// agents, once the worktree holds the task's base: its instruction
	// files and skills, as a local worker's task is told those of the
	// project it works on, never the worker project's.
	Guide func(dir string) TreeGuide

	// sessions are the sessions this worker runs tasks of.
	sessions handedSessions

	// mu guards slots, the worker of each worktree, kept from task to
	// task with its tools; it is held while a worktree is first made, for
	// git cannot add two worktrees of one repository at once.
	mu    sync.Mutex
	slots map[string]*localWorker
}

// HandedTask is one handed task's run: every option of it is here.
type HandedTask struct {
	// Repo is the worker's repository, which holds Assignment.Base; Dir
	// the worktree the task runs in (made, or reset and cleaned, from the
	// base on Assignment.Branch).
	Repo *gitwork.Repo
	Dir  string
	// Slot numbers the worker's slot in the log.
	Slot int
	// Assignment is the task; its Plan is the coordinator's, named.
	Assignment Assignment
	// Out receives the task's output.
	Out io.Writer
	// Allowance, when set, is what the coordinator allows the task's
	// model calls to spend (the least of what is left of its run's, plan's
	// and task's budgets): it stands in for the task's own budget. Nil
	// leaves the bound of the worker's config, as a lone run of the task
	// has it (HandedTaskLimit).
	Allowance *budget.Allowance
	// Hold, when set with Allowance, holds each model call's worst case in
	// the coordinator's ledger before it is made (budget.ScopeHeld), so
	// that tasks running at once cannot together cross its shared budgets.
	Hold budget.Holder
	// Spent, when set, hears what the task's model calls cost once it
	// ends, however it ends, and the call its budget refused, if one did.
	Spent func(HandedSpend)
}

// TreeGuide is what the code in a task's worktree tells the agents.
type TreeGuide struct {
	// Carry has a model call's context say so: the call is told the
	// code's instructions and skills.
	Carry func(context.Context) context.Context
	// Skills are what the task's skill tool loads.
	Skills []instructions.Skill
	// Warnings name the files of the code that could not be used.
	Warnings []string
}

// HandedSpend is what a handed task's model calls cost.
type HandedSpend struct {
	// USD is what the calls of known price cost; Calls counts the calls,
	// Unknown those whose price was unknown.
	USD            float64
	Calls, Unknown int
	// Stop is the call the task's budget refused, nil when none was.
	Stop *budget.Error
}

// Run carries out t and returns its commit. A panic in the task's run is
// its failure, never the process's end.
func (h *HandedHost) Run(ctx context.Context, t HandedTask) (out Outcome, err error) {
	logger := h.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := t.Assignment
	if a.Plan == nil || a.Plan.Name == "" {
		return Outcome{}, errors.New("a handed task needs its named plan")
	}
	defer func() {
		if v := recover(); v != nil {
			logger.Error("handed task panicked", "plan", a.Plan.Name, "task", a.Task.Ordinal(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			out, err = Outcome{}, fmt.Errorf("the task's run failed: %v (the worker's log has the stack)", v)
		}
	}()
	if h.Halted != nil {
		if err := h.Halted(); err != nil {
			return Outcome{}, err
		}
	}
	w, err := h.worker(ctx, t)
	if err != nil {
		return Outcome{}, err
	}
	p := a.Plan
	// The coordinator's .weave/ (its config, hooks, state) that came with
	// the base is never used here: the task runs under this host's config,
	// which its owner trusted. Its skills stay, for they are text for the
	// model, as the project's are to a local worker's task (Guide).
	// The plan the coordinator sent is the one other file of .weave/ the
	// task has, where an agent and plan_check read it (the tools are rooted
	// at the worktree); the commit never takes it (gitwork.Commit).
	planFile := filepath.Join(t.Dir, layout.DirName, "plans", p.Name+".md")
	if p.Path == "" {
		p.Path = planFile
	}
	// The plan's copy is left in place from task to task (keep) and
	// written again only when it is not the plan's bytes: the next task
	// of a run finds it as the last one left it.
	keep := path.Join(layout.DirName, "plans", p.Name+".md")
	w.keep = []string{keep}
	w.prepare = func() error {
		if err := dropWeaveDir(t.Dir, keep); err != nil {
			return err
		}
		return writePlanCopy(planFile, p.Src)
	}
	w.progress = func(string) (plugins.PlanProgress, error) { return planProgress(p), nil }
	w.toolsAt = nil
	if h.Guide != nil {
		w.toolsAt = func() []tools.Option {
			g := h.Guide(t.Dir)
			for _, warn := range g.Warnings {
				logger.Warn("the task's code: "+warn, "plan", p.Name, "task", a.Task.Ordinal())
			}
			return []tools.Option{tools.WithSkills(g.Skills), tools.WithModelContext(g.Carry)}
		}
	}
	remind, err := h.begin(ctx, t)
	w.remind = remind
	if err == nil {
		out, err = h.runTask(ctx, w, t, logger)
	}
	// The session ends however the task did, and a hook whose failure
	// policy is closed that failed there stops the worker too.
	h.end(context.WithoutCancel(ctx), t, endReason(ctx, err))
	if err == nil && h.Halted != nil {
		if herr := h.Halted(); herr != nil {
			return Outcome{}, herr
		}
	}
	return out, err
}

// runTask runs t in w under its budget. A panic in it is its failure.
func (h *HandedHost) runTask(ctx context.Context, w *localWorker, t HandedTask, logger *slog.Logger) (out Outcome, err error) {
	a := t.Assignment
	defer func() {
		if v := recover(); v != nil {
			logger.Error("handed task panicked", "plan", a.Plan.Name, "task", a.Task.Ordinal(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			out, err = Outcome{}, fmt.Errorf("the task's run failed: %v (the worker's log has the stack)", v)
		}
	}()
	if h.Budget != nil {
		key, label := a.Task.Key(), a.Task.Label()
		switch {
		case t.Allowance != nil && t.Hold != nil:
			ctx = h.Budget.ScopeHeld(ctx, key, label, *t.Allowance, t.Hold)
		case t.Allowance != nil:
			ctx = h.Budget.ScopeAllowance(ctx, key, label, *t.Allowance)
		default:
			ctx = h.Budget.Scope(ctx, key, label, HandedTaskLimit(h.Config, a.Task))
		}
		if t.Spent != nil {
			defer func() {
				var s HandedSpend
				s.USD, s.Calls, s.Unknown = h.Budget.ScopeSpent(ctx)
				if err != nil {
					// A refusal stops a task only when the task failed:
					// one that went on and succeeded lands.
					s.Stop = h.Budget.TrippedFor(key)
				}
				t.Spent(s)
			}()
		}
	}
	return w.Run(ctx, a, t.Out)
}

// dropWeaveDir removes what the coordinator's code holds under .weave/ in
// the worktree dir, all but its skills folder and the file keep (the
// plan's copy, slash-separated under dir, checked by writePlanCopy). A
// .weave, or a folder on the way to keep, that is not a folder (a link to
// elsewhere, say) goes whole: nothing it leads to is touched.
func dropWeaveDir(dir, keep string) error {
	return dropAllBut(filepath.Join(dir, layout.DirName), strings.TrimPrefix(keep, layout.DirName+"/"), true)
}

// dropAllBut removes everything in the folder root but the path keep
// (slash-separated, under root) and, when skills, its skills folder.
func dropAllBut(root, keep string, skills bool) error {
	fi, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return os.Remove(root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	first, rest, deeper := strings.Cut(keep, "/")
	for _, e := range entries {
		name := e.Name()
		switch {
		case skills && name == "skills" && e.IsDir():
			continue
		case name == first && deeper && e.IsDir():
			if err := dropAllBut(filepath.Join(root, name), rest, false); err != nil {
				return err
			}
			continue
		case name == first && !deeper && e.Type().IsRegular():
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
			return err
		}
	}
	return nil
}

// writePlanCopy makes the file at path hold src: left as it is when it is
// a file that does, else made anew (never written through, for it may be
// a link another hard link shares).
func writePlanCopy(path string, src []byte) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o644 && fi.Size() == int64(len(src)) {
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, src) {
			return nil
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, src, 0o644)
}

// worker is the worker of t's worktree, made (with the worktree, at t's
// base) the first time; one task at a time uses it.
func (h *HandedHost) worker(ctx context.Context, t HandedTask) (*localWorker, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.slots[t.Dir]; w != nil && w.repo == t.Repo {
		return w, nil
	}
	if err := t.Repo.Worktree(ctx, t.Dir, t.Assignment.Branch, t.Assignment.Base); err != nil {
		return nil, err
	}
	logger := h.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &localWorker{index: t.Slot, dir: t.Dir, rel: relTo(t.Repo.Root, t.Dir), repo: t.Repo,
		main: h.Tools, cfg: h.Config, logger: logger,
		agentFor: func(task plans.Task) (string, plugins.Agent) { return routeTask(h.Route, h.Agent, task) },
	}
	if h.slots == nil {
		h.slots = map[string]*localWorker{}
	}
	h.slots[t.Dir] = w
	return w, nil
}

// HandedTaskLimit is what a lone run of task t alone may spend under cfg:
// the tightest of budget.task (or the task's [budget: $N]), budget.run and
// budget.plan, for that run is the task and the plan's spending starts
// from nothing where the worker runs it (0: no bound).
func HandedTaskLimit(cfg *config.Config, t plans.Task) float64 {
	if cfg == nil {
		return 0
	}
	task := cfg.Budget.Task
	if t.Budget != "" {
		if v, err := budget.ParseAmount(t.Budget); err == nil {
			task = v
		}
	}
	limit := 0.0
	for _, v := range []float64{task, cfg.Budget.Run, cfg.Budget.Plan} {
		if v > 0 && (limit == 0 || v < limit) {
			limit = v
		}
	}
	return limit
}

// routeTask is the role and agent that carry out t: route's, else agent
// as Tapestry.
func routeTask(route Router, agent plugins.Agent, t plans.Task) (string, plugins.Agent) {
	if route != nil {
		if role, a, ok := route(t); ok {
			return role, a
		}
	}
	return agents.Tapestry, agent
}

// planProgress is p's progress as the host services report it.
func planProgress(p *plans.Plan) plugins.PlanProgress {
	pr := p.Progress()
	out := plugins.PlanProgress{Plan: p.Name, Total: pr.Total, Done: pr.Completed, Tasks: make([]plugins.PlanTask, len(p.Tasks))}
	for i, tk := range p.Tasks {
		out.Tasks[i] = plugins.PlanTask{Number: tk.Number, Title: tk.Title, Done: tk.Done}
	}
	return out
}
