package workers

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/collab"
	"github.com/weavehq/weave/internal/gitwork"
)

// CoordinatorOptions tune a Coordinator; zero values take the defaults.
type CoordinatorOptions struct {
	// Window is how long a call for proposals collects bids (default
	// 300ms).
	Window time.Duration
	// Lease is how long a worker may stay silent before it loses its task
	// (default 15s); workers send a heartbeat every third of it.
	Lease time.Duration
	// Events, when set, hears of every award, renewal, loss and refusal.
	Events func(Event)
	// Clock gives the time; nil means time.Now.
	Clock func() time.Time
	// Remote, when set, is a git remote of the coordinator's repository
	// (its name, run.remote) that carries the code instead of the bundle
	// store; RemoteURL is its URL as workers reach it (gitremote.go).
	Remote, RemoteURL string
	// Prefer names the worker that wins a tie of the best bids: the run's
	// own local workers, whose code travels nowhere. A full-fit bid of
	// another worker then closes a call early only once it has answered.
	Prefer string
	// Holds, when set, serves the holds workers ask before each model call
	// of a task whose offer carries a budget (hold.go).
	Holds HoldServer
}

// Event is something that happened to an offered task.
type Event struct {
	// Type is, on the coordinator's side, work.offered, work.awarded,
	// work.renewed, work.lost, work.refused, work.returned or work.nobid;
	// on a worker's, worker.started, worker.lost, worker.returned or
	// worker.refused.
	Type   string `json:"type"`
	Key    string `json:"key"`
	Award  string `json:"award,omitempty"`
	Worker string `json:"worker,omitempty"`
	// Labels are what the worker offers, as its bid said (work.awarded).
	Labels []string `json:"labels,omitempty"`
	Detail string   `json:"detail,omitempty"`
}

// Coordinator offers a run's tasks to the workers through the contract net
// of the collaboration primitives and takes their commits back. It is safe
// for concurrent use: each Offer is one task.
type Coordinator struct {
	id     string
	repo   *gitwork.Repo
	collab *collab.Collaborator
	bus    collab.Bus
	leases *Leases
	store  *Store
	live   *live
	opts   CoordinatorOptions
	// calls begins the thread id of each of its calls for proposals.
	calls string

	mu      sync.Mutex
	waiting map[string]*awaiting // award -> its Offer, until it returns
	// offering holds the keys of the tasks on offer (under mu): a task's
	// lease is one per key, so two offers of one task at once would each
	// take it from the other, without end.
	offering map[string]bool
	// pushed holds the bases pushed to the git remote (gitremote.go).
	pushed sync.Map
	// awards holds the awards made or taken back (under mu); bases counts the
	// Offers using each base (under baseMu), offered holds every base
	// offered (a commit of the repository, basis.go); published the bases
	// whose bundle this coordinator stored, with the names of their
	// bundles over a basis (under pubMu). gc.go.
	awards    map[string]bool
	baseMu    sync.Mutex
	bases     map[string]int
	offered   map[string]bool
	pubMu     sync.Mutex
	published map[string][]string
	// puts holds the base bundles stored or being stored, by name, and
	// sent the latest bundles sent in assignments (under pubMu; basis.go).
	puts map[string]*putting
	sent map[string][]byte
	// gcWG counts the removals under way, which Close waits for; closing
	// (under baseMu) says Close waits already, and no removal is counted
	// after it: one is done in place then.
	gcWG    sync.WaitGroup
	closing bool
	// holdSub takes the workers' hold requests (hold.go).
	holdSub *nats.Subscription
}

// NewCoordinator joins the bus as agent id (the mailbox agent.<id>.replies
// takes the workers' heartbeats and results) and opens the lease bucket
// and the bundle store. repo is where results are fetched.
func NewCoordinator(ctx context.Context, b collab.Bus, js jetstream.JetStream, repo *gitwork.Repo, id string, opts CoordinatorOptions) (*Coordinator, error) {
	if opts.Window <= 0 {
		opts.Window = 300 * time.Millisecond
	}
	if opts.Lease <= 0 {
		opts.Lease = 15 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	leases, err := OpenLeases(ctx, js)
	if err != nil {
		return nil, err
	}
	store, err := OpenStore(ctx, js)
	if err != nil {
		return nil, err
	}
	lv, err := watchLive(context.WithoutCancel(ctx), js, opts.Clock)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{id: id, repo: repo, bus: b, leases: leases, store: store, live: lv, opts: opts, waiting: map[string]*awaiting{},
		offering: map[string]bool{}, awards: map[string]bool{}, bases: map[string]int{}, offered: map[string]bool{}, published: map[string][]string{}, puts: map[string]*putting{}, sent: map[string][]byte{}}
	col, err := collab.New(ctx, b, id, collab.Options{Inbox: c.inbox})
	if err != nil {
		_ = lv.stop()
		return nil, err
	}
	// The bids of this coordinator's calls come to one subscription made
	// now, not one per call (collab.ListenCalls); its threads are its own.
	c.calls = offerPrefix + newID()[:8] + "-"
	if err := col.ListenCalls(ctx, c.calls); err != nil {
		_ = lv.stop()
		_ = col.Close()
		return nil, err
	}
	c.collab = col
	if err := c.listenHolds(js.Conn()); err != nil {
		_ = lv.stop()
		_ = col.Close()
		return nil, err
	}
	return c, nil
}

// Close leaves the bus, and removes from the bundle store what its
// awards left there (gc.go).
func (c *Coordinator) Close() error {
	_ = c.live.stop()
	if c.holdSub != nil {
		_ = c.holdSub.Unsubscribe()
	}
	err := c.collab.Close()
	c.sweep()
	return err
}

// enough closes a call for proposals before its window ends once no
// better bid can come: one bid has the best score there is (a worker with
// every slot free) and the preferred worker (CoordinatorOptions.Prefer),
// which would win the tie, has answered or is not live; or every live
// worker in the registry has answered, with a bid or a refusal. The
// ranking is the contract net's either way.
func (c *Coordinator) enough(proposals []collab.Event) bool {
	senders := make(map[string]bool, len(proposals))
	full := false
	for _, p := range proposals {
		sender := p.Metadata[collab.KeySender]
		if p.Score() >= 1 {
			if c.opts.Prefer == "" || sender == "agent."+c.opts.Prefer {
				return true
			}
			full = true
		}
		senders[sender] = true
	}
	if full && (senders["agent."+c.opts.Prefer] || !c.live.isLive(c.opts.Prefer)) {
		return true
	}
	return c.live.answered(senders)
}

// preferFirst moves the preferred worker's bid (CoordinatorOptions.Prefer)
// to the front when it ties with the best, the bids being ranked best
// first.
func (c *Coordinator) preferFirst(bids []collab.Event) {
	if c.opts.Prefer == "" || len(bids) < 2 {
		return
	}
	i := slices.IndexFunc(bids, func(b collab.Event) bool { return b.Metadata[collab.KeySender] == "agent."+c.opts.Prefer })
	if i > 0 && bids[i].Score() >= bids[0].Score() {
		b := bids[i]
		copy(bids[1:i+1], bids[:i])
		bids[0] = b
	}
}

// Live names the workers the coordinator sees live: those whose answers
// close a call for proposals before its window ends.
func (c *Coordinator) Live() []string { return c.live.names() }

// Leases is the coordinator's lease bucket.
func (c *Coordinator) Leases() *Leases { return c.leases }

func (c *Coordinator) emit(e Event) {
	if c.opts.Events != nil {
		c.opts.Events(e)
	}
}

// ErrTaskFailed says the worker ran the task and it failed there; the
// error's text is the worker's reason.
var ErrTaskFailed = errors.New("task failed on its worker")

// Offer runs o on a worker and returns the task's commit, fetched into the
// coordinator's repository on the task's branch (refs/heads/<o.Branch>). It publishes the base
// bundle while it calls for proposals carrying the task's needs, awards the task
// to the best bid and records the award as a lease; a worker that goes
// silent past its lease, refuses the assignment or leaves loses the task,
// which is offered again under a new award id. With no bid, the call is
// repeated until ctx ends.
//
// The commit is checked before Offer returns it: it names the offer's
// plan, task and attempt in its trailers and its parent is o.Base. Its
// verify blocks are the caller's to run, on the landed tree.
func (c *Coordinator) Offer(ctx context.Context, o Offer) (Result, error) {
	c.mu.Lock()
	if c.offering[o.Key()] {
		c.mu.Unlock()
		return Result{}, fmt.Errorf("offer task %s: it is on offer already; a task runs once at a time", o.Key())
	}
	c.offering[o.Key()] = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.offering, o.Key())
		c.mu.Unlock()
	}()
	// On a git remote the base is pushed first, since the offer names the
	// remote. In the bundle store, it is stored once the call for
	// proposals has picked the worker, as what that worker lacks of it
	// (basis.go).
	release := c.useBase(o.Base)
	defer release()
	if c.opts.Remote != "" {
		if err := c.publishBase(ctx, &o); err != nil {
			return Result{}, fmt.Errorf("offer task %s: publish its base: %w", o.Key(), err)
		}
	}
	cfp, err := json.Marshal(Offer{Run: o.Run, Task: o.Task, Title: o.Title, Needs: o.Needs, Base: o.Base, Attempt: o.Attempt, Remote: o.Remote})
	if err != nil {
		return Result{}, err
	}
	quiet := false
	for {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("offer task %s: %w", o.Key(), err)
		}
		award := newID()
		c.emit(Event{Type: "work.offered", Key: o.Key(), Award: award})
		called := time.Now()
		bids, err := c.collab.ContractNetUntil(ctx, c.calls+keyToken(o.Key())+"-"+award, cfp, c.opts.Window, 3, c.enough)
		if err != nil {
			return Result{}, fmt.Errorf("offer task %s: %w", o.Key(), err)
		}
		bids = slices.DeleteFunc(bids, func(b collab.Event) bool { return b.Score() < 0 })
		c.preferFirst(bids)
		if len(bids) == 0 {
			if !quiet {
				c.emit(Event{Type: "work.nobid", Key: o.Key(), Detail: "no worker bid; offering again"})
				quiet = true
			}
			// Every worker may have declined at once: the next call waits
			// for the rest of the window, as a call nobody answers does.
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(called.Add(c.opts.Window))):
			}
			continue
		}
		res, ok, err := c.assign(ctx, o, award, bids, called)
		if err != nil {
			// A task that failed on its worker still says what it spent.
			return res, err
		}
		if ok {
			return res, nil
		}
	}
}

// assign awards the task to the first bidder that takes it and waits for
// its result; ok is false when the task must be offered again.
func (c *Coordinator) assign(ctx context.Context, o Offer, award string, bids []collab.Event, called time.Time) (Result, bool, error) {
	ch := make(chan Result, 1)
	wait := &awaiting{ch: ch}
	c.mu.Lock()
	c.waiting[award] = wait
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, award)
		c.mu.Unlock()
	}()
	// The award's holds are kept from before its worker hears of it until
	// it ends, however it ends: those not settled are released when its
	// result came. An award this coordinator stops itself (its Offer's
	// context ended: the run pauses or stops) leaves its worker running
	// until it hears, and one whose lease was lost may have a worker cut
	// off from NATS but not from its model: a call under way then goes
	// on, and is charged what it may cost.
	c.holdsOpen(o.Key(), award)
	stopped := false
	defer func() { c.holdsClose(award, stopped) }()
	var worker string
	var labels []string
	var bundleOut time.Duration
	for _, b := range bids {
		bid, err := decode[Bid]("bid", b.Payload)
		if err != nil || bid.Worker == "" || "agent."+bid.Worker != b.Metadata[collab.KeySender] {
			c.emit(Event{Type: "work.refused", Key: o.Key(), Award: award, Detail: "a bid whose worker is not its sender"})
			continue
		}
		// The worker's base goes to the store before the assignment: no
		// worker hears of the task before it can fetch its base.
		start := time.Now()
		basis, bundle, err := c.baseFor(ctx, o, bid.Bases)
		if err != nil {
			return Result{}, false, fmt.Errorf("offer task %s: publish its base: %w", o.Key(), err)
		}
		bundleOut = time.Since(start)
		now := c.opts.Clock()
		token := newID() + newID()
		c.awarded(award)
		// The lease is put while the assignment travels: the worker takes
		// the task only once the lease names it (Agent.inbox), so the put
		// need not be done before the worker hears of the award, only
		// before the award counts. One that failed takes the award back,
		// in case it was stored all the same.
		lease := Lease{TokenHash: TokenHash(token), Key: o.Key(), Run: o.Run, Task: o.Task, Award: award, AttemptID: o.AttemptID, Worker: bid.Worker, Base: o.Base, Basis: basis, Branch: o.Branch, Digest: o.Digest(), Granted: now, Heartbeat: now}
		c.mu.Lock()
		wait.lease, wait.rev = lease, 0 // a result is taken only once the bucket has it too (awaited)
		c.mu.Unlock()
		granted := make(chan error, 1)
		go func() {
			rev, err := c.leases.Grant(ctx, lease)
			if err == nil {
				c.revised(award, rev)
			}
			granted <- err
		}()
		a := Assignment{Offer: o, Award: award, Coordinator: c.id, Lease: c.opts.Lease, Token: token, Basis: basis, Bundle: bundle}
		sent := c.send(ctx, bid.Worker, TypeAssign, a)
		if err := <-granted; err != nil {
			_ = c.leases.Release(context.WithoutCancel(ctx), o.Key(), award)
			c.takenBack(context.WithoutCancel(ctx), award)
			return Result{}, false, err
		}
		if sent {
			worker, labels = bid.Worker, bid.Labels
			break
		}
	}
	if worker == "" {
		_ = c.leases.Release(ctx, o.Key(), award)
		c.takenBack(ctx, award)
		return Result{}, false, nil
	}
	awarded := time.Since(called)
	c.emit(Event{Type: "work.awarded", Key: o.Key(), Award: award, Worker: worker, Labels: labels})
	check := time.NewTicker(c.opts.Lease / 4)
	defer check.Stop()
	for {
		select {
		case res := <-ch:
			res.Steps.Award, res.Steps.BundleOut = awarded, bundleOut
			c.mu.Lock()
			rev := wait.rev
			c.mu.Unlock()
			_ = c.leases.releaseAt(ctx, o.Key(), award, rev)
			if res.Error != "" {
				return res, true, fmt.Errorf("task %s on %s: %w: %s", o.Key(), worker, ErrTaskFailed, res.Error)
			}
			c.emit(Event{Type: "work.returned", Key: o.Key(), Award: award, Worker: worker, Detail: res.Commit})
			return res, true, nil
		case <-check.C:
			l, _, err := c.leases.Holds(ctx, o.Key(), award, worker)
			if err == nil && !l.Expired(c.opts.Clock(), c.opts.Lease) {
				continue
			}
			if err != nil && !errors.Is(err, ErrNoLease) {
				continue // NATS unreachable: judged again when it is back
			}
			detail := fmt.Sprintf("silent for more than %s", c.opts.Lease)
			if err != nil {
				detail = err.Error()
			}
			stopped = true
			_ = c.leases.Release(ctx, o.Key(), award)
			c.takenBack(ctx, award)
			c.emit(Event{Type: "work.lost", Key: o.Key(), Award: award, Worker: worker, Detail: detail})
			return Result{}, false, nil
		case <-ctx.Done():
			stopped = true
			_ = c.leases.Release(context.WithoutCancel(ctx), o.Key(), award)
			c.takenBack(context.WithoutCancel(ctx), award)
			return Result{}, false, fmt.Errorf("task %s on %s: %w", o.Key(), worker, ctx.Err())
		}
	}
}

// TakeBack releases every lease of run, for a coordinator that starts
// anew: it has awarded nothing yet, so each lease of its run is an award
// of one that stopped (killed, cut off). The worker still running such a
// task has its next heartbeat refused, stops it and frees its slot, and
// its result is refused; the run offers the task again under an award of
// its own. It returns the leases taken back.
func (c *Coordinator) TakeBack(ctx context.Context, run string) ([]Lease, error) {
	all, err := c.leases.OfRun(ctx, run)
	if err != nil {
		return nil, err
	}
	var out []Lease
	var bases []string
	defer func() {
		// The objects of the awards taken back go, and the bases only
		// they named.
		for _, l := range out {
			c.takenBack(ctx, l.Award)
			bases = append(bases, l.Base)
			c.publishedBase(l.Base, l.Basis)
		}
		c.dropBases(ctx, bases)
	}()
	for _, l := range all {
		if err := c.leases.Release(ctx, l.Key, l.Award); err != nil {
			return out, err
		}
		c.emit(Event{Type: "work.lost", Key: l.Key, Award: l.Award, Worker: l.Worker, Detail: "awarded by a coordinator that stopped; the task is offered again"})
		out = append(out, l)
	}
	return out, nil
}

// send requests typ with payload at worker's mailbox and reports whether
// the worker took it.
func (c *Coordinator) send(ctx context.Context, worker, typ string, payload any) bool {
	data, err := json.Marshal(payload)
	if err != nil {
		return false
	}
	e := collab.Event{Type: typ, Source: c.collab.Sender(), Metadata: map[string]string{collab.KeySender: c.collab.Sender()}, Payload: data}
	m, err := e.Message(collab.AgentReplyTopic(worker))
	if err != nil {
		return false
	}
	res, err := c.bus.Request(ctx, m)
	return err == nil && res.Processed()
}

// inbox takes the workers' heartbeats and results. Both are refused
// unless the lease of their task is held by their worker under their
// award: a worker never answers for a task it was not awarded, nor for an
// award it lost.
func (c *Coordinator) inbox(ctx context.Context, e collab.Event) (bus.Ack, error) {
	switch e.Type {
	case TypeHeartbeat:
		hb, err := decode[Heartbeat]("heartbeat", e.Payload)
		if err != nil {
			return bus.Ack{Message: err.Error()}, nil
		}
		rev, err := c.leases.Renew(ctx, hb.Key, hb.Award, hb.Worker, hb.Token, c.opts.Clock())
		if err != nil {
			c.emit(Event{Type: "work.refused", Key: hb.Key, Award: hb.Award, Worker: hb.Worker, Detail: "heartbeat: " + err.Error()})
			return bus.Ack{Message: "lease lost: " + err.Error()}, nil
		}
		c.revised(hb.Award, rev)
		c.emit(Event{Type: "work.renewed", Key: hb.Key, Award: hb.Award, Worker: hb.Worker})
		return bus.Ack{Processed: true}, nil
	case TypeBase:
		req, err := decode[BaseRequest]("base request", e.Payload)
		if err != nil {
			return bus.Ack{Message: err.Error()}, nil
		}
		if err := c.sendWhole(ctx, req); err != nil {
			c.emit(Event{Type: "work.refused", Key: req.Key, Award: req.Award, Worker: req.Worker, Detail: "base: " + err.Error()})
			return bus.Ack{Message: "base refused: " + err.Error()}, nil
		}
		return bus.Ack{Processed: true}, nil
	case TypeResult:
		res, err := decode[Result]("result", e.Payload)
		if err != nil {
			return bus.Ack{Message: err.Error()}, nil
		}
		if err := c.take(ctx, res); err != nil {
			c.refusedLate(ctx, res.Award)
			c.emit(Event{Type: "work.refused", Key: res.Key, Award: res.Award, Worker: res.Worker, Detail: "result: " + err.Error()})
			return bus.Ack{Message: "result refused: " + err.Error()}, nil
		}
		return bus.Ack{Processed: true}, nil
	}
	return bus.Ack{Message: "unknown event " + e.Type}, nil
}

// awaiting is an award an Offer waits on: where its result goes, and the
// lease granted for it (put, or being put).
type awaiting struct {
	ch    chan Result
	lease Lease
	// rev is the lease's revision as this coordinator last wrote it (under
	// Coordinator.mu), 0 while unknown: its release is one round trip.
	rev uint64
}

// revised records rev as the revision of award's lease, written by this
// coordinator. Revisions grow with each write to the bucket: the latest
// write of the lease has the largest, whichever answer came first.
func (c *Coordinator) revised(award string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.waiting[award]; ok && rev > w.rev {
		w.rev = rev
	}
}

// awaited checks that award of task key is one an Offer waits on, and
// that worker proves it with token, against the lease this coordinator
// granted; it returns where the Offer waits, that lease, and held, which
// reads the lease bucket and says whether the lease still names the award
// there: a coordinator started anew for the run (TakeBack) may have taken
// it back meanwhile. held is to be called before the result counts; the
// caller may do what changes nothing (unpack, check) while it reads.
func (c *Coordinator) awaited(ctx context.Context, key, award, worker, token string) (chan Result, Lease, func() error, error) {
	c.mu.Lock()
	w, ok := c.waiting[award]
	var l Lease
	if ok {
		l = w.lease
	}
	c.mu.Unlock()
	if !ok {
		return nil, Lease{}, nil, fmt.Errorf("award %s of task %s is not being waited for", award, key)
	}
	if l.Award != award || l.Key != key || l.Worker != worker {
		return nil, Lease{}, nil, fmt.Errorf("task %s: %w for award %s of %s", key, ErrNoLease, award, worker)
	}
	if subtle.ConstantTimeCompare([]byte(TokenHash(token)), []byte(l.TokenHash)) != 1 {
		return nil, Lease{}, nil, fmt.Errorf("task %s: %w: the award's token is wrong", key, ErrNoLease)
	}
	read := make(chan error, 1)
	go func() {
		_, _, err := c.leases.Proves(ctx, key, award, worker, token)
		read <- err
	}()
	return w.ch, l, sync.OnceValue(func() error { return <-read }), nil
}

// take checks a result against its lease, fetches its commit and hands it
// to the waiting Offer.
func (c *Coordinator) take(ctx context.Context, res Result) error {
	ch, l, held, err := c.awaited(ctx, res.Key, res.Award, res.Worker, res.Token)
	if err != nil {
		return err
	}
	if res.Error == "" {
		start := time.Now()
		if err := c.fetch(ctx, l, &res, held); err != nil {
			return err
		}
		res.Steps.Fetch = time.Since(start)
	}
	if err := held(); err != nil {
		return err
	}
	res.Bundle = nil // in the repository now
	select {
	case ch <- res:
		// The commit is in the repository now; the log stays until the
		// caller has read it (Forget).
		if !res.Inline {
			_ = c.store.Delete(ctx, bundleName("result", res.Award))
		}
		return nil
	default:
		return fmt.Errorf("award %s of task %s has a result already", res.Award, res.Key)
	}
}

// fetch brings the result's commit into the repository, on the task's
// branch, after checking that it is what the lease was for; no ref moves
// before held says the lease still names the award.
func (c *Coordinator) fetch(ctx context.Context, l Lease, res *Result, held func() error) error {
	if c.opts.Remote != "" {
		if err := held(); err != nil {
			return err
		}
		return c.fetchFromRemote(ctx, l, res)
	}
	data := res.Bundle
	if !res.Inline {
		var err error
		if data, err = c.store.Get(ctx, bundleName("result", res.Award)); err != nil {
			return fmt.Errorf("fetch the commit of task %s: %w", l.Key, err)
		}
	}
	if err := fetchResult(ctx, c.repo, data, l, res.Commit, held); err != nil {
		return fmt.Errorf("fetch the commit of task %s: %w", l.Key, err)
	}
	return nil
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}
