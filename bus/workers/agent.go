package workers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/collab"
	"github.com/weavehq/weave/internal/gitwork"
)

// Exec runs an assigned task in repo, which holds the task's base commit,
// writing its output to log, and returns the task's one commit (its parent
// a.Base, its trailers naming the run, the task and a.AttemptID). ctx ends
// when the worker loses the task or leaves.
type Exec func(ctx context.Context, repo *gitwork.Repo, a Assignment, log io.Writer) (commit string, err error)

// spendKey is the context key of the task's spend report (ReportSpend).
type spendKey struct{}

// spendBox holds what an Exec reported its task spent.
type spendBox struct {
	mu    sync.Mutex
	spend *Spend
}

// ReportSpend says what the model calls of the task ctx is an Exec's for
// cost, for its result: the coordinator charges it against the run's
// budgets. A later report replaces an earlier one; outside an Exec it does
// nothing.
func ReportSpend(ctx context.Context, s Spend) {
	if b, ok := ctx.Value(spendKey{}).(*spendBox); ok {
		b.mu.Lock()
		b.spend = &s
		b.mu.Unlock()
	}
}

func (b *spendBox) get() *Spend {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spend
}

// AgentOptions tune an Agent; zero values take the defaults.
type AgentOptions struct {
	// Announce is how often the worker renews its registry entry (default
	// 5s).
	Announce time.Duration
	// Events, when set, hears of every task taken, lost, returned or
	// refused.
	Events func(Event)
	// Remotes are the URLs of the git remotes the worker fetches a base
	// from and pushes its commits to when an offer names one (run.remote);
	// it bids on no offer naming another.
	Remotes []string
}

// Agent is a worker on the bus: it bids on the calls for proposals it can
// serve, runs what it is awarded through its Exec, renews its lease while
// it works, and returns the commit as a bundle.
type Agent struct {
	info     Info
	repo     *gitwork.Repo
	exec     Exec
	bus      collab.Bus
	collab   *collab.Collaborator
	leases   *Leases
	store    *Store
	registry *Registry
	opts     AgentOptions
	sub      bus.Subscription
	// nc carries the hold requests of the tasks with a budget (hold.go).
	nc *nats.Conn

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// changed asks announceLoop to write the registry entry now: the
	// worker's tasks changed (kick).
	changed chan struct{}

	mu   sync.Mutex
	busy map[string]string // award -> task key
	// calls maps the broadcast topic of each call for proposals whose
	// bid is still being sent to a channel closed when the call's summary
	// is heard: the call ended, the bid is no longer wanted (propose).
	calls sync.Map

	// baseMu makes the tasks that start at once fetch their bases one at a
	// time: each fetch moves the one ref refs/weave/base, and a task whose
	// base another just fetched needs none.
	baseMu sync.Mutex
	// held are the bases the worker fetched or found held, newest first
	// (under heldMu; basis.go): what its bids name, and what it needs not
	// ask git for.
	heldMu sync.Mutex
	held   []string
}

// Join makes a worker of info.Name on the bus: it subscribes to the calls
// for proposals and to its mailbox (agent.<name>.replies) and announces
// itself in the registry. repo is where tasks run; Close leaves.
func Join(ctx context.Context, b collab.Bus, js jetstream.JetStream, repo *gitwork.Repo, info Info, exec Exec, opts AgentOptions) (*Agent, error) {
	if info.Slots <= 0 {
		info.Slots = 1
	}
	if opts.Announce <= 0 {
		opts.Announce = 5 * time.Second
	}
	a := &Agent{info: info, repo: repo, exec: exec, bus: b, opts: opts, busy: map[string]string{}, changed: make(chan struct{}, 1), nc: js.Conn()}
	var err error
	if a.leases, err = OpenLeases(ctx, js); err != nil {
		return nil, err
	}
	if a.store, err = OpenStore(ctx, js); err != nil {
		return nil, err
	}
	if a.registry, err = OpenRegistry(ctx, js); err != nil {
		return nil, err
	}
	a.ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if a.collab, err = collab.New(ctx, b, info.Name, collab.Options{Inbox: a.inbox}); err != nil {
		a.cancel()
		return nil, err
	}
	if a.sub, err = b.Subscribe(ctx, OfferPattern, a.onCall, bus.SubscribeOptions{Name: a.collab.Sender() + "/offers"}); err != nil {
		a.cancel()
		_ = a.collab.Close()
		return nil, fmt.Errorf("worker %s: listen for offers: %w", info.Name, err)
	}
	if err := a.announce(ctx); err != nil {
		a.cancel()
		_ = a.sub.Unsubscribe()
		_ = a.collab.Close()
		return nil, err
	}
	a.wg.Add(1)
	go a.announceLoop()
	return a, nil
}

// Close stops taking offers, abandons the tasks running (their leases
// lapse and they are offered again), and leaves the registry.
func (a *Agent) Close() error {
	a.cancel()
	_ = a.sub.Unsubscribe()
	_ = a.collab.Close()
	a.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return a.registry.Leave(ctx, a.info.Name)
}

// Done is closed when the agent has been closed.
func (a *Agent) Done() <-chan struct{} { return a.ctx.Done() }

func (a *Agent) emit(e Event) {
	e.Worker = a.info.Name
	if a.opts.Events != nil {
		a.opts.Events(e)
	}
}

func (a *Agent) snapshot() Info {
	a.mu.Lock()
	defer a.mu.Unlock()
	in := a.info
	in.Tasks = nil
	for _, k := range a.busy {
		in.Tasks = append(in.Tasks, k)
	}
	sort.Strings(in.Tasks)
	return in
}

func (a *Agent) announce(ctx context.Context) error {
	in := a.snapshot()
	in.Heartbeat = time.Now()
	return a.registry.Announce(ctx, in)
}

func (a *Agent) announceLoop() {
	defer a.wg.Done()
	t := time.NewTicker(a.opts.Announce)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		case <-a.changed:
		}
		// A failure (NATS restarting) is mended by the next tick.
		_ = a.announce(a.ctx)
	}
}

// kick has announceLoop write the registry entry anew, off the task's
// path: a task starts without waiting for the bucket. Kicks while one
// write is pending make one write, of the tasks as they are then.
func (a *Agent) kick() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// Fits reports whether a worker offering info can run a task needing n,
// and how well: the share of its slots still free.
func Fits(info Info, busy int, n Needs) (float64, bool) {
	for _, l := range n.Labels {
		if !slices.Contains(info.Labels, l) {
			return 0, false
		}
	}
	if n.Category != "" && len(info.Categories) > 0 && !slices.Contains(info.Categories, n.Category) {
		return 0, false
	}
	if n.Model != "" && len(info.Models) > 0 && !slices.Contains(info.Models, n.Model) {
		return 0, false
	}
	free := info.Slots - busy
	if free <= 0 {
		return 0, false
	}
	return float64(free) / float64(info.Slots), true
}

// onCall bids on a call for proposals the worker can serve.
func (a *Agent) onCall(ctx context.Context, m bus.Message) (bus.Ack, error) {
	e, err := collab.Decode(m)
	if err == nil && e.Type == collab.TypeSummary {
		if ended, ok := a.calls.LoadAndDelete(e.Topic); ok {
			close(ended.(chan struct{}))
		}
		return bus.Ack{}, nil
	}
	if err != nil || e.Type != collab.TypeCFP {
		return bus.Ack{}, nil
	}
	o, err := decode[Offer]("offer", e.Payload)
	if err != nil {
		return bus.Ack{Message: err.Error()}, nil
	}
	a.mu.Lock()
	busy := len(a.busy)
	a.mu.Unlock()
	score, ok := Fits(a.info, busy, o.Needs)
	b := Bid{Worker: a.info.Name, Labels: a.info.Labels, Slots: a.info.Slots, Busy: busy, Bases: a.heldBases()}
	if !ok || !a.reaches(o.Remote) {
		// A worker without the run's git remote cannot take its code.
		ok = false
		score, b.Decline = -1, "cannot take it"
	}
	bid, _ := json.Marshal(b)
	// The proposal is a request the coordinator answers once it has taken
	// it; it must not hold up the next call.
	ended := make(chan struct{})
	a.calls.Store(e.Topic, ended)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.calls.CompareAndDelete(e.Topic, ended)
		a.propose(e, score, bid, ended)
	}()
	if !ok {
		return bus.Ack{Message: "cannot take it"}, nil
	}
	return bus.Ack{Processed: true}, nil
}

// proposeFor bounds how long a bid that reached nobody is sent again.
const proposeFor = 10 * time.Second

// propose sends the bid until someone receives it, the call ends (its
// summary is heard on the call's topic), the worker leaves, or proposeFor
// passes. The coordinator subscribes to the call's reply topic just before
// it publishes the call, and this process's bus learns of that
// subscription from the bus's subscription registry, a JetStream watch,
// which can lag behind the call itself, a plain NATS message: a bid sent
// in between reaches nobody, without an error. Sent once only, it was
// lost, and the call waited out its whole window for an answer that never
// came.
func (a *Agent) propose(e collab.Event, score float64, bid []byte, ended <-chan struct{}) {
	giveUp := time.Now().Add(proposeFor)
	wait := 5 * time.Millisecond
	for {
		res, err := a.collab.Propose(a.ctx, e, score, bid)
		if err != nil || res.Delivered > 0 || len(res.Acks) > 0 || time.Now().After(giveUp) {
			return
		}
		select {
		case <-a.ctx.Done():
			return
		case <-ended:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// inbox takes assignments. One is taken only when the lease bucket says
// this worker holds the task under that award for that very offer: a peer
// that can write to the mailbox but not to the leases cannot make the
// worker run anything. The coordinator puts the lease while the
// assignment travels, so the worker waits for it a little (leaseWait).
func (a *Agent) inbox(ctx context.Context, e collab.Event) (bus.Ack, error) {
	if e.Type != TypeAssign {
		return bus.Ack{Message: "unknown event " + e.Type}, nil
	}
	as, err := decode[Assignment]("assignment", e.Payload)
	if err != nil {
		return bus.Ack{Message: err.Error()}, nil
	}
	l, err := a.awaitLease(ctx, as)
	if err != nil {
		a.emit(Event{Type: "worker.refused", Key: as.Key(), Award: as.Award, Detail: "assignment: " + err.Error()})
		return bus.Ack{Message: "refused: " + err.Error()}, nil
	}
	if !a.reaches(as.Remote) {
		a.emit(Event{Type: "worker.refused", Key: as.Key(), Award: as.Award, Detail: "assignment names a git remote this worker was not given"})
		return bus.Ack{Message: "refused: the worker does not use that git remote (weave worker --remote)"}, nil
	}
	if l.Digest != as.Offer.Digest() || l.AttemptID != as.AttemptID || l.Base != as.Base || l.Basis != as.Basis {
		a.emit(Event{Type: "worker.refused", Key: as.Key(), Award: as.Award, Detail: "assignment differs from its lease"})
		return bus.Ack{Message: "refused: the assignment is not the task its lease names"}, nil
	}
	a.mu.Lock()
	if len(a.busy) >= a.info.Slots {
		a.mu.Unlock()
		return bus.Ack{Message: "no free slot"}, nil
	}
	a.busy[as.Award] = as.Key()
	a.mu.Unlock()
	a.wg.Add(1)
	go a.run(as)
	return bus.Ack{Processed: true}, nil
}

// leaseWait bounds how long a worker waits for the lease of an
// assignment to name it: the coordinator's put of the lease travels beside
// the assignment and most often is in before the worker reads it.
const leaseWait = 2 * time.Second

// awaitLease reads the lease of as until it names this worker under the
// assignment's award with its token, for at most leaseWait; an error
// other than the lease not naming it (the bucket unreadable) refuses at
// once.
func (a *Agent) awaitLease(ctx context.Context, as Assignment) (Lease, error) {
	giveUp := time.Now().Add(leaseWait)
	wait := time.Millisecond
	for {
		l, _, err := a.leases.Proves(ctx, as.Key(), as.Award, a.info.Name, as.Token)
		if err == nil || !errors.Is(err, ErrNoLease) || time.Now().After(giveUp) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return l, err
		case <-a.ctx.Done():
			return l, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// run carries out one assignment.
func (a *Agent) run(as Assignment) {
	defer a.wg.Done()
	defer func() {
		a.mu.Lock()
		delete(a.busy, as.Award)
		a.mu.Unlock()
		a.kick()
	}()
	a.kick()
	a.emit(Event{Type: "worker.started", Key: as.Key(), Award: as.Award})
	ctx, cancel := context.WithCancelCause(a.ctx)
	defer cancel(nil)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		a.heartbeat(ctx, cancel, as)
	}()
	res := Result{Key: as.Key(), Award: as.Award, Worker: a.info.Name, Token: as.Token}
	var log bytes.Buffer
	spent := &spendBox{}
	// A task with a budget asks the coordinator to hold each model call's
	// worst case before it is made (hold.go).
	ectx := withHolds(context.WithValue(ctx, spendKey{}, spent), a.nc, a.info.Name, as)
	commit, bundle, err := a.work(ectx, as, &log, &res.Steps)
	res.Spend = spent.get()
	if ctx.Err() != nil {
		// The task was lost or the worker is leaving: its result would be
		// refused, and another worker has it or will.
		cancel(nil)
		<-hbDone
		a.emit(Event{Type: "worker.lost", Key: as.Key(), Award: as.Award, Detail: context.Cause(ctx).Error()})
		return
	}
	if err != nil {
		res.Error = err.Error()
	} else {
		res.Commit = commit
	}
	a.attach(ctx, &res, bundle, log.Bytes())
	cancel(nil)
	<-hbDone
	if msg, ok := a.deliver(res, as); !ok {
		a.emit(Event{Type: "worker.refused", Key: as.Key(), Award: as.Award, Detail: msg})
		return
	}
	a.emit(Event{Type: "worker.returned", Key: as.Key(), Award: as.Award, Detail: res.Commit})
}

// work fetches the base when the repository lacks it, runs the task and
// makes its commit reachable by the coordinator: bundle is the commit's
// bundle when it is to travel in the result (attach), else nil.
func (a *Agent) work(ctx context.Context, as Assignment, log io.Writer, steps *Steps) (string, []byte, error) {
	start := time.Now()
	if err := a.haveBase(ctx, as); err != nil {
		return "", nil, fmt.Errorf("fetch the task's base: %w", err)
	}
	steps.BaseIn = time.Since(start)
	start = time.Now()
	commit, err := a.exec(ctx, a.repo, as, log)
	steps.Run = time.Since(start)
	if err != nil {
		return "", nil, err
	}
	start = time.Now()
	bundle, err := a.sendResult(ctx, as, commit)
	if err != nil {
		return "", nil, fmt.Errorf("send the task's commit: %w", err)
	}
	steps.BundleBack = time.Since(start)
	return commit, bundle, nil
}

// haveBase makes sure the repository holds the task's base, fetching it
// when it does not. A base the worker fetched before is not asked of git
// again.
func (a *Agent) haveBase(ctx context.Context, as Assignment) error {
	if a.holds(as.Base) {
		return nil
	}
	a.baseMu.Lock()
	defer a.baseMu.Unlock()
	if a.holds(as.Base) {
		return nil
	}
	if err := a.fetchBase(ctx, as); err != nil {
		return err
	}
	a.hold(as.Base)
	return nil
}

// errLeaseLost ends a task whose lease the coordinator no longer renews.
var errLeaseLost = errors.New("the coordinator took the task back")

// heartbeat renews the lease every third of its length until ctx ends; a
// refusal means the lease is lost, and ends the task. So does a whole
// lease without one renewal taken: by then the coordinator judges the
// lease lost (its heartbeat is older than the lease) and, since a call
// it cannot hear of could cross the run's budget, charges the calls this
// worker holds their worst cases; the task must not make more.
func (a *Agent) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, as Assignment) {
	every := as.Lease / 3
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	hb := Heartbeat{Key: as.Key(), Award: as.Award, Worker: a.info.Name, Token: as.Token}
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, refused := a.request(ctx, as.Coordinator, TypeHeartbeat, hb)
		if refused != "" {
			cancel(fmt.Errorf("%w: %s", errLeaseLost, refused))
			return
		}
		if ok {
			renewed = time.Now()
			continue
		}
		// A transport failure (NATS restarting) is tried again next tick,
		// for as long as the lease may still stand.
		if as.Lease > 0 && time.Since(renewed) > as.Lease {
			cancel(fmt.Errorf("%w: the coordinator was not reached for %s", errLeaseLost, as.Lease))
			return
		}
	}
}

// deliver sends the result until the coordinator takes or refuses it, the
// worker leaves, or nobody has answered for twice the lease: by then a
// coordinator that is back has offered the task again, and a slot must not
// wait for one that is gone.
func (a *Agent) deliver(res Result, as Assignment) (string, bool) {
	giveUp := time.Now().Add(2 * max(as.Lease, time.Second))
	for {
		ok, refused := a.request(a.ctx, as.Coordinator, TypeResult, res)
		if ok {
			return "", true
		}
		if refused != "" {
			return refused, false
		}
		if time.Now().After(giveUp) {
			return "the coordinator did not answer; the task will be offered again", false
		}
		select {
		case <-a.ctx.Done():
			return "the worker left before the result was taken", false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// request sends typ to agent's mailbox: ok when processed, refused the
// reason when answered but not processed, both empty when nobody answered.
func (a *Agent) request(ctx context.Context, agent, typ string, payload any) (ok bool, refused string) {
	data, err := json.Marshal(payload)
	if err != nil {
		return false, err.Error()
	}
	e := collab.Event{Type: typ, Source: a.collab.Sender(), Metadata: map[string]string{collab.KeySender: a.collab.Sender()}, Payload: data}
	m, err := e.Message(collab.AgentReplyTopic(agent))
	if err != nil {
		return false, err.Error()
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := a.bus.Request(rctx, m)
	if err != nil || len(res.Acks) == 0 {
		return false, ""
	}
	if res.Processed() {
		return true, ""
	}
	for _, ack := range res.Acks {
		if ack.Message != "" {
			return false, ack.Message
		}
		if ack.Error != "" {
			return false, "" // the handler failed: try again
		}
	}
	return false, "refused"
}
