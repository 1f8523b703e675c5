package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/gitwork"
)

// Options tune a Pool; zero values take bus/workers' defaults.
type Options struct {
	// Lease is how long a worker may stay silent before it loses its task.
	Lease time.Duration
	// Window is how long a call for proposals collects bids.
	Window time.Duration
	// Labels are what the local workers offer (gpu, os=linux).
	Labels []string
	// Events hears of every award, renewal, loss and refusal.
	Events func(workers.Event)
	// Logger is the host log; nil discards.
	Logger *slog.Logger
	// Remote, when set, names the git remote of the repository that
	// carries the code instead of the bundle store (run.remote);
	// RemoteURL is its URL, which the workers must have been given
	// (weave worker --remote).
	Remote, RemoteURL string
	// Run is the plan the pool's coordinator offers tasks of: the leases
	// its awards left in JetStream when an earlier coordinator of that
	// run stopped (killed mid-run) are taken back before anything is
	// offered.
	Run string
	// Budget, when set, is the run's ledger: each task offered carries
	// what it may still spend (its allowance), and what a worker says its
	// task spent is charged to it, never more than that allowance
	// (budget.go).
	Budget *budget.Ledger
}

// Pool is the workers of a run coordinated over NATS.
type Pool struct {
	coord   *workers.Coordinator
	local   *workers.Agent
	store   *workers.Store
	slots   []run.Worker
	logger  *slog.Logger
	pending sync.Map // attempt id -> pendingTask, for the local bidder
	ledger  *budget.Ledger
	reports sync.Map // task key -> func(workers.Event), the run's Assignment.Report
	free    chan run.Worker
	// holds keeps the workers' holds in the ledger (hold.go); nil without
	// one.
	holds *holds
}

// NewPool joins the run's coordinator to b as agent id and returns a pool
// of len(local) workers. Each offers its task to every worker on the bus,
// local ones included: local join as one bidder with a slot per local
// worker. Close leaves the bus.
func NewPool(ctx context.Context, b *natsbus.Bus, repo *gitwork.Repo, id string, local []run.Worker, o Options) (*Pool, error) {
	if len(local) == 0 {
		return nil, errors.New("a pool needs at least one worker slot")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{logger: o.Logger, free: make(chan run.Worker, len(local)), ledger: o.Budget}
	events := func(e workers.Event) {
		p.logger.Info("workers: "+e.Type, "task", e.Key, "award", e.Award, "worker", e.Worker, "detail", e.Detail)
		switch e.Type {
		case "work.awarded", "work.renewed", "work.lost":
			if f, ok := p.reports.Load(e.Key); ok {
				f.(func(workers.Event))(e)
			}
		}
		if o.Events != nil {
			o.Events(e)
		}
	}
	copts := workers.CoordinatorOptions{Lease: o.Lease, Window: o.Window, Events: events, Remote: o.Remote, RemoteURL: o.RemoteURL, Prefer: id + "-local"}
	if o.Budget != nil {
		p.holds = newHolds(o.Budget, p.logger)
		copts.Holds = p.holds
	}
	js := b.JetStream()
	var err error
	if p.store, err = workers.OpenStore(ctx, js); err != nil {
		return nil, err
	}
	if p.coord, err = workers.NewCoordinator(ctx, b, js, repo, id, copts); err != nil {
		return nil, err
	}
	if o.Run != "" {
		// A coordinator killed mid-run left its awards behind: their
		// workers' heartbeats and results are refused from now on, which
		// stops those tasks and frees the workers' slots; the run offers
		// each again (state.json says which are unfinished).
		if _, err := p.coord.TakeBack(ctx, o.Run); err != nil {
			_ = p.coord.Close()
			return nil, err
		}
	}
	for _, w := range local {
		p.free <- w
	}
	info := workers.Info{Name: id + "-local", Labels: o.Labels, Slots: len(local)}
	var remotes []string
	if o.Remote != "" {
		remotes = []string{o.RemoteURL}
	}
	if p.local, err = workers.Join(ctx, b, js, repo, info, p.runLocal, workers.AgentOptions{Events: events, Remotes: remotes}); err != nil {
		_ = p.coord.Close()
		return nil, err
	}
	for i := range local {
		p.slots = append(p.slots, &netWorker{pool: p, name: "net" + strconv.Itoa(i+1)})
	}
	return p, nil
}

// Workers are the pool's slots, for the run.
func (p *Pool) Workers() []run.Worker { return p.slots }

// Close leaves the bus: the local bidder first, then the coordinator.
func (p *Pool) Close() error {
	return errors.Join(p.local.Close(), p.coord.Close())
}

// runLocal is the local bidder's Exec: a free local worker runs the run's
// own assignment for the attempt.
func (p *Pool) runLocal(ctx context.Context, _ *gitwork.Repo, a workers.Assignment, log io.Writer) (string, error) {
	v, ok := p.pending.Load(a.AttemptID)
	if !ok {
		return "", fmt.Errorf("attempt %s of task %s is not this run's", a.AttemptID, a.Key())
	}
	pt := v.(pendingTask)
	// The task's model calls are checked against its budget and charged
	// to it in this process's ledger, as the run's own workers' are.
	ctx = budget.Carry(ctx, pt.scope)
	var w run.Worker
	select {
	case w = <-p.free:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { p.free <- w }()
	out, err := w.Run(ctx, pt.a, log)
	if err != nil {
		return "", err
	}
	return out.Commit, nil
}

// pendingTask is a task a slot offers: its assignment and the context of
// the run's worker, which carries the task's budget (budget.Scope).
type pendingTask struct {
	a     run.Assignment
	scope context.Context
}

// netWorker is one slot of the pool: its Run offers the task on the bus.
type netWorker struct {
	pool *Pool
	name string
}

func (w *netWorker) Name() string { return w.name }

// Run implements run.Worker.
func (w *netWorker) Run(ctx context.Context, a run.Assignment, out io.Writer) (run.Outcome, error) {
	p := w.pool
	p.pending.Store(a.AttemptID, pendingTask{a: a, scope: ctx})
	defer p.pending.Delete(a.AttemptID)
	o := workers.Offer{
		Run: a.Plan.Name, Task: a.Task.Ordinal(), Title: a.Task.Title,
		Needs:   workers.Needs{Labels: a.Task.Needs, Category: a.Task.Category},
		Plan:    string(a.Plan.Src),
		Session: a.Session, Base: a.Base, Branch: a.Branch,
		Attempt: a.Attempt, AttemptID: a.AttemptID,
	}
	allow, limited := p.allowance(ctx, &o)
	if limited && p.holds != nil {
		// Its worker holds each call's worst case against the task's
		// budget scope (hold.go).
		defer p.holds.offering(o.Key(), ctx)()
	}
	if a.Report != nil {
		p.reports.Store(o.Key(), func(e workers.Event) {
			if ev, ok := RunEvent(a.Plan.Name, e); ok {
				a.Report(ev)
			}
		})
		defer p.reports.Delete(o.Key())
	}
	res, err := p.coord.Offer(ctx, o)
	if res.Inline {
		// The output came in the result; the store holds nothing of the
		// award's.
		_, _ = out.Write(res.Log)
	} else {
		if log, lerr := p.store.Get(context.WithoutCancel(ctx), "log-"+res.Award); lerr == nil && res.Award != "" {
			_, _ = out.Write(log)
		}
		// The log is in the task's log now; no live award needs the award's
		// objects anymore.
		p.coord.Forget(context.WithoutCancel(ctx), res.Award)
	}
	if berr := p.charge(ctx, o, res, allow, limited); berr != nil {
		return run.Outcome{}, berr
	}
	if err != nil {
		return run.Outcome{}, err
	}
	// The steps go to the task's log, for whoever weighs the coordinator's
	// share of a task (scripts/bench.sh does).
	fmt.Fprintf(out, "ran on worker %s (award %s): %s\n", res.Worker, res.Award, res.Steps)
	return run.Outcome{Commit: res.Commit}, nil
}

var _ run.Worker = (*netWorker)(nil)

// GitRemoteURL is the URL of the repository's remote name (run.remote),
// as workers are to reach it. A URL holding a password is refused: it
// would travel in every offer, to every worker on the bus.
func GitRemoteURL(ctx context.Context, repo *gitwork.Repo, name string) (string, error) {
	u, err := repo.RemoteURL(ctx, name)
	if err != nil {
		return "", fmt.Errorf("run.remote: %w", err)
	}
	// A user in an http(s) URL is most often a token.
	pu, perr := url.Parse(u)
	if gitwork.RedactURL(u) != u || perr == nil && pu.User != nil && (pu.Scheme == "http" || pu.Scheme == "https") {
		return "", fmt.Errorf("run.remote: the URL of remote %q holds a password or token, which every worker would see; use ssh keys or a git credential helper", name)
	}
	return u, nil
}

// IDToken makes s usable in an agent id: letters, digits, '-' and '_'
// stay, anything else becomes '-'.
func IDToken(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b[i] = '-'
		}
	}
	return string(b)
}

// RunEvent is the run event of a coordinator's event (work.awarded,
// work.renewed, work.lost, work.refused, work.returned, work.nobid; its
// detail as Reason); ok is false for the events of the local bidder's
// side and for work.offered, which say nothing the run's own do not.
func RunEvent(plan string, e workers.Event) (run.Event, bool) {
	if !strings.HasPrefix(e.Type, "work.") || e.Type == "work.offered" {
		return run.Event{}, false
	}
	ev := run.Event{Type: e.Type, Time: time.Now(), Plan: plan, WorkerName: e.Worker, WorkerLabels: e.Labels, Reason: e.Detail}
	if _, n, ok := strings.Cut(e.Key, "."); ok {
		ev.Task, _ = strconv.Atoi(n)
	}
	if e.Type == "work.returned" {
		ev.Commit, ev.Reason = e.Detail, ""
	}
	return ev, true
}
