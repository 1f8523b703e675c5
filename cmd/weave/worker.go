package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/plans"
)

type workerOptions struct {
	*globalOptions
	Streams    *Streams
	Bus        string
	Creds      string
	Name       string
	Dir        string
	Labels     []string
	Categories []string
	Models     []string
	Slots      int
	Remotes    []string
	// ready, when set, is called once the worker has joined (tests).
	ready func(name string)
}

// newCmdWorker makes this machine a worker of the runs coordinated over a
// NATS bus: `start-work --workers N --bus nats://...` elsewhere offers it
// tasks.
func newCmdWorker(g *globalOptions, s *Streams) *cobra.Command {
	opts := &workerOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "worker --bus nats://HOST:PORT",
		Short: "Join runs over NATS as a worker: bid on tasks, run them here, send the commits back",
		Example: `  weave worker --bus nats://coord.example:4222 --creds worker.creds --labels os=linux,gpu --slots 4
  weave workers --bus nats://coord.example:4222 --creds worker.creds`,
		Long: `Join the runs coordinated on a NATS bus (with JetStream) as a worker, until
Ctrl-C. The worker announces itself (name, labels, slots), bids on the tasks it
can run (every label a task needs, a free slot), and runs each task it is
awarded in a git worktree of its own repository (--repo), under the config,
plugins, sandbox and hooks it loaded once from that repository and this
machine's user config, up to --slots at once. It sends back the task's
commit and its output; the coordinator lands the commit and runs the task's
verify blocks again itself. docs/workers-nats.md says more.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return workerRun(c.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Bus, "bus", "", "the NATS bus of the runs, nats://HOST:PORT (default: bus.url, else WEAVE_BUS_URL)")
	f.StringVar(&opts.Creds, "creds", "", "a NATS credentials file (default: bus.nats.creds_file)")
	f.StringVar(&opts.Name, "name", "", "the worker's name on the bus (default: the host's name)")
	f.StringVar(&opts.Dir, "repo", "", "the git repository tasks run in, made when missing (default: weave/worker/NAME under the user cache directory)")
	f.StringSliceVar(&opts.Labels, "labels", nil, "what this worker offers, matched against the tasks' [needs: ...] (os=linux,gpu)")
	f.StringSliceVar(&opts.Categories, "categories", nil, "the task categories it runs (default: any)")
	f.StringSliceVar(&opts.Models, "models", nil, "the models it runs (default: any)")
	f.IntVar(&opts.Slots, "slots", 1, "how many tasks it runs at once")
	f.StringSliceVar(&opts.Remotes, "remote", nil, "the URL of a git remote that carries the code of runs with run.remote set, as the coordinator's `git remote get-url` prints it; the worker bids on no run using another")
	return cmd
}

// workerName is a valid worker name: it becomes part of topics and keys.
var workerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

func workerRun(ctx context.Context, opts *workerOptions) error {
	if opts.Slots < 1 {
		return usageErrorf("--slots must be at least 1, got %d", opts.Slots)
	}
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = keySafe(host)
	}
	if !workerName.MatchString(opts.Name) {
		return usageErrorf("worker name %q: use letters, digits, - and _ (up to 63)", opts.Name)
	}
	nb, err := openWorkBus(ctx, opts.globalOptions, opts.Bus, opts.Creds, "join as a worker")
	if err != nil {
		return err
	}
	defer nb.Close()
	// The tasks' blocks and the host's plugins never learn the bus the
	// worker joined: it is the coordinator's, not theirs (the token is a
	// secret no child gets anyway).
	_ = os.Unsetenv(busface.URLEnv)
	if opts.Dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no directory for the worker's repository: %w (pass --repo)", err)
		}
		opts.Dir = filepath.Join(cache, "weave", "worker", opts.Name)
	}
	repo, err := workerRepo(ctx, opts.Dir)
	if err != nil {
		return err
	}
	defer func() { _ = repo.Close() }()
	// The host is loaded once, from the worker's repository and the config
	// its owner trusted, never from the .weave/ a coordinator's code
	// carries; every task shares it.
	cfg, _, err := opts.loadConfig(repo.Root, nil)
	if err != nil {
		return err
	}
	if err := cfg.CheckShell(); err != nil {
		return usageErrorf("%v", err)
	}
	warnUnrunHooks(opts.Streams.ErrOut, cfg)
	h, closeHost, err := openLoggedHost(ctx, repo.Root, cfg, host.WithTools(), host.WithNotice(noticeTo(opts.Streams.ErrOut)))
	if err != nil {
		return err
	}
	// Every plugin, and every process a task started, ends with the
	// worker, once its tasks have stopped (agent.Close).
	defer closeHost()
	printWarnings(opts.Streams.ErrOut, h.Warnings())
	handed, err := h.Handed()
	if err != nil {
		return err
	}
	// A hook whose failure policy is closed that failed stops the worker,
	// as it stops a run: the tasks it has are offered again elsewhere.
	wctx, halt := context.WithCancelCause(ctx)
	defer halt(nil)
	x := &taskExec{host: handed, slots: make(chan int, opts.Slots), out: &syncWriter{w: opts.Streams.Out}, halt: halt}
	for i := range opts.Slots {
		x.slots <- i + 1
	}
	info := workers.Info{Name: opts.Name, Labels: opts.Labels, Categories: opts.Categories, Models: opts.Models, Slots: opts.Slots}
	agent, err := workers.Join(ctx, nb, nb.JetStream(), repo, info, x.run, workers.AgentOptions{Events: x.event, Remotes: opts.Remotes})
	if err != nil {
		return err
	}
	fmt.Fprintf(x.out, "worker %s joined %s (labels %s, %d slot(s)); Ctrl-C to leave\n",
		opts.Name, natsbus.Redact(busface.URL(nil, opts.Bus)), orNone(opts.Labels), opts.Slots)
	if opts.ready != nil {
		opts.ready(opts.Name)
	}
	<-wctx.Done()
	err = agent.Close()
	fmt.Fprintf(x.out, "worker %s left\n", opts.Name)
	if ctx.Err() == nil {
		// The worker stopped itself.
		return context.Cause(wctx)
	}
	return err
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ",")
}

// keySafe keeps letters, digits, - and _ of s.
func keySafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, s)
	if s == "" || !workerName.MatchString(s) {
		return "worker-" + strconv.Itoa(os.Getpid())
	}
	return s
}

// openWorkBus opens the NATS bus of a run with workers: --bus, else
// bus.url, else WEAVE_BUS_URL, with the credentials of bus.nats.* or
// --creds.
func openWorkBus(ctx context.Context, g *globalOptions, flag, creds, what string) (*natsbus.Bus, error) {
	_, cfg, _, err := g.optionalProjectConfig()
	if err != nil {
		return nil, err
	}
	url := busface.URL(cfg, flag)
	if !strings.HasPrefix(url, "nats://") && !strings.HasPrefix(url, "tls://") {
		return nil, usageErrorf("to %s, pass --bus nats://HOST:PORT (a nats-server with JetStream), or set bus.url or %s", what, busface.URLEnv)
	}
	auth, err := busface.NATSAuth(cfg, url)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if creds != "" {
		auth.CredsFile, auth.NKeyFile, auth.User, auth.Password, auth.Token = creds, "", "", "", ""
	}
	bopts, err := busface.Options(cfg)
	if err != nil {
		return nil, err
	}
	b, err := natsbus.New(ctx, url, bopts, natsbus.WithAuth(auth))
	if err != nil {
		return nil, fmt.Errorf("join the nats bus at %s: %w", natsbus.Redact(url), err)
	}
	return b, nil
}

// workerRepo opens the worker's repository at dir, making it when missing.
func workerRepo(ctx context.Context, dir string) (*gitwork.Repo, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the worker's repository: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); errors.Is(err, os.ErrNotExist) {
		cmd := exec.CommandContext(ctx, "git", "init", "-q", dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("make the worker's repository %s: %v: %s", dir, err, out)
		}
	}
	repo, err := gitwork.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	// Every task fetches and commits here; each would start git's
	// maintenance after it. The worker keeps the repository tidy itself,
	// as it joins and every maintainEvery tasks after (taskExec).
	if _, err := repo.Git(ctx, "", "config", "maintenance.auto", "false"); err != nil {
		return nil, err
	}
	maintain(ctx, repo)
	return repo, nil
}

// maintainEvery is how many tasks a worker runs between two runs of git's
// maintenance on its repository.
const maintainEvery = 64

// maintain runs git's maintenance on the worker's repository when it is
// due (packing loose objects, say); a failure is only logged by git.
func maintain(ctx context.Context, repo *gitwork.Repo) {
	_, _ = repo.Git(ctx, "", "maintenance", "run", "--auto", "--quiet")
}

// taskExec runs each awarded task in this process, through the host the
// worker loaded once from its own repository and config (its plugins,
// hooks, sandbox, gate and budgets, shared by the tasks it runs at once):
// in a worktree of the worker's repository (one per slot, reused), as a
// local worker of a run with workers runs one (run.HandedHost). Its commit
// is what the coordinator lands. A task's blocks run in process groups of
// their own, killed when the task's lease goes or the worker dies.
type taskExec struct {
	host  *run.HandedHost
	slots chan int
	out   io.Writer
	// ran counts the tasks run, for maintain.
	ran atomic.Int64
	// halt stops the worker with why.
	halt context.CancelCauseFunc
}

// planName is a plan name a worker accepts from a coordinator: it names
// the task's commit and its branch.
var planName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func (x *taskExec) event(e workers.Event) {
	switch e.Type {
	case "worker.started":
		fmt.Fprintf(x.out, "task %s: started (award %s)\n", e.Key, e.Award)
	case "worker.returned":
		fmt.Fprintf(x.out, "task %s: returned commit %.12s\n", e.Key, e.Detail)
	case "worker.lost":
		fmt.Fprintf(x.out, "task %s: stopped: %s\n", e.Key, e.Detail)
	case "worker.refused":
		fmt.Fprintf(x.out, "task %s: refused: %s\n", e.Key, e.Detail)
	}
}

func (x *taskExec) run(ctx context.Context, repo *gitwork.Repo, a workers.Assignment, log io.Writer) (string, error) {
	t, err := x.task(ctx, repo, a, log)
	if err != nil {
		return "", err
	}
	var slot int
	select {
	case slot = <-x.slots:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { x.slots <- slot }()
	t.Slot = slot
	// The branch is the slot's: a task offered again may come back to
	// another slot while the first still has it checked out, and the
	// coordinator takes the commit, not the branch.
	t.Dir = filepath.Join(repo.Root, layout.DirName, "worktrees", "w"+strconv.Itoa(slot))
	t.Assignment.Branch = "weave/worker-slot-" + strconv.Itoa(slot)
	// What the task spent goes back with its result, for the
	// coordinator's ledger.
	t.Spent = func(s run.HandedSpend) { workers.ReportSpend(ctx, taskSpend(s)) }
	out, err := x.host.Run(ctx, t)
	if x.ran.Add(1)%maintainEvery == 0 {
		maintain(ctx, repo)
	}
	if x.host.Halted != nil {
		if herr := x.host.Halted(); herr != nil {
			x.halt(herr)
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return "", fmt.Errorf("task %d (%s) was not done: %w", a.Task, t.Assignment.Task.Title, err)
	}
	return out.Commit, nil
}

// task is the run of assignment a, every option of it in one place: the
// plan and the task the coordinator sent, its budget, where it writes.
func (x *taskExec) task(ctx context.Context, repo *gitwork.Repo, a workers.Assignment, log io.Writer) (run.HandedTask, error) {
	if !planName.MatchString(a.Run) || strings.Contains(a.Run, "..") {
		return run.HandedTask{}, fmt.Errorf("plan name %q is not one a worker takes", a.Run)
	}
	p, err := plans.ParseContext(ctx, []byte(a.Plan))
	if err != nil {
		return run.HandedTask{}, fmt.Errorf("read the plan: %w", err)
	}
	p.Name = a.Run
	t, ok := p.ByOrdinal(a.Task)
	if !ok {
		return run.HandedTask{}, fmt.Errorf("the plan has no task %d", a.Task)
	}
	return run.HandedTask{
		Repo: repo,
		Out:  log,
		Assignment: run.Assignment{Plan: p, Task: t, Session: a.Session, Base: a.Base,
			Attempt: a.Attempt, AttemptID: a.AttemptID},
		// The task may spend what the coordinator allows, no more.
		Allowance: taskAllowance(a.Budget),
		// ... and holds each call's worst case in the coordinator's ledger
		// first, where the run's and plan's budgets are shared.
		Hold: taskHolder(ctx),
	}, nil
}

// syncWriter serialises the status lines of concurrent tasks.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
