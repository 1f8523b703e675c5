package workers

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Holds keep a run's shared budgets exact across workers. An offer with a
// budget (Offer.Budget) carries what was left when it was offered; tasks
// running at once each had that whole remainder. So before each model call
// of such a task the worker asks the coordinator to hold the call's worst
// case in the run's own ledger, beside every other call under way, local or
// remote (HoldRequest, op "hold"); the call is made only once the hold is
// granted, and when it ends the worker settles the hold with what the call
// cost (op "settle"). The coordinator never charges a settle more than its
// hold, and releases every hold not settled when the award's result is
// taken; one still open when the award is stopped or its lease lost is
// charged what it held, since a worker cut off from NATS but not from its
// model may still be making the call (it gives the task up once a lease
// passes without a heartbeat taken: Agent.heartbeat).
//
// The requests travel on a subject of the worker's own,
// weave.hold.<coordinator>.<worker> (HoldSubject), plain NATS request and
// reply: a worker's NATS user needs only its own subject to publish on, and
// the coordinator takes a request only from the worker its award's lease
// names, with the award's token, while it waits for the award's result.
// Without an answer the worker refuses the call (fail closed).

// The operations of a HoldRequest.
const (
	HoldOpHold   = "hold"
	HoldOpSettle = "settle"
)

// holdPrefix starts every hold subject.
const holdPrefix = "weave.hold."

// HoldSubject is the subject on which worker asks coordinator for holds.
func HoldSubject(coordinator, worker string) string {
	return holdPrefix + keyToken(coordinator) + "." + keyToken(worker)
}

// holdPattern matches the hold subjects of every worker of coordinator.
func holdPattern(coordinator string) string { return holdPrefix + keyToken(coordinator) + ".*" }

// HoldRequest asks the coordinator to hold a model call's worst case
// (Op "hold": Model, Need) or settles a hold it granted (Op "settle": Hold,
// USD, Unknown), for the task of an award, with the award's token.
type HoldRequest struct {
	Op     string `json:"op"`
	Key    string `json:"key"`
	Award  string `json:"award"`
	Worker string `json:"worker"`
	Token  string `json:"token"`
	// ID names the request, the same on every retry of it: a coordinator
	// whose answer was late and is asked again answers as it did, so a
	// call is held once, a hold settled once.
	ID string `json:"id,omitempty"`
	// Model and Need (US dollars): the call and its worst case.
	Model string  `json:"model,omitempty"`
	Need  float64 `json:"need,omitempty"`
	// Hold names the hold settled; USD is what the call cost, Unknown
	// says its price was unknown (a call of unknown price, never zero),
	// Failed that the call failed and costs nothing (it is not counted).
	Hold    string  `json:"hold,omitempty"`
	USD     float64 `json:"usd,omitempty"`
	Unknown bool    `json:"unknown,omitempty"`
	Failed  bool    `json:"failed,omitempty"`
}

// HoldReply answers a HoldRequest: Granted with the hold's name, or
// Refusal when the call could cross a budget, or Error when the request
// itself was refused (not this worker's award, a stale one, a wrong token).
type HoldReply struct {
	Granted bool           `json:"granted,omitempty"`
	Hold    string         `json:"hold,omitempty"`
	Refusal *BudgetRefusal `json:"refusal,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// BudgetRefusal is the coordinator's ledger refusing a hold: the budget
// the call could cross (host/budget's Error on the wire).
type BudgetRefusal struct {
	Scope   string  `json:"scope"`
	TaskKey string  `json:"task_key,omitempty"`
	Task    string  `json:"task,omitempty"`
	Limit   float64 `json:"limit"`
	Spent   float64 `json:"spent"`
	Held    float64 `json:"held"`
	Need    float64 `json:"need"`
	Model   string  `json:"model,omitempty"`
	NoPrice bool    `json:"no_price,omitempty"`
	Run     float64 `json:"run"`
	Plan    float64 `json:"plan"`
}

// HoldServer keeps the holds of a coordinator's awards (the run's ledger,
// host/remote). The coordinator calls Open when it awards task key under
// award, before the worker hears of it; Serve with every request it
// authenticated for that award; Close once the award ended, however it
// ended: a hold not settled by then is released, its worker's result
// taken. charge says its worker may still be making a call: the
// coordinator stopped the award itself (the run pauses or stops) and the
// worker hears of it only at its next heartbeat, or its lease was lost
// and the worker, cut off from NATS, may still reach its model until it
// gives the task up (a lease without a heartbeat taken): such a hold is
// charged what it held instead.
type HoldServer interface {
	Open(key, award string)
	Serve(req HoldRequest) HoldReply
	Close(award string, charge bool)
}

// listenHolds subscribes the coordinator to its workers' hold requests.
func (c *Coordinator) listenHolds(nc *nats.Conn) error {
	if c.opts.Holds == nil {
		return nil
	}
	sub, err := nc.Subscribe(holdPattern(c.id), c.onHold)
	if err != nil {
		return fmt.Errorf("coordinator %s: listen for holds: %w", c.id, err)
	}
	c.holdSub = sub
	return nil
}

// onHold authenticates a hold request and has the server answer it. A
// request is taken only from the worker whose own subject it came on,
// which the lease of an award still waited for names, with that award's
// token: a peer cannot hold or settle for a task it was not awarded, nor
// for an award it lost.
func (c *Coordinator) onHold(m *nats.Msg) {
	reply := func(r HoldReply) {
		data, _ := json.Marshal(r) // plain fields: never fails
		_ = m.Respond(data)
	}
	var req HoldRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(HoldReply{Error: "decode hold request: " + err.Error()})
		return
	}
	if err := c.holdAuth(m.Subject, req); err != nil {
		c.emit(Event{Type: "work.refused", Key: req.Key, Award: req.Award, Worker: req.Worker, Detail: "hold: " + err.Error()})
		reply(HoldReply{Error: "refused: " + err.Error()})
		return
	}
	reply(c.opts.Holds.Serve(req))
}

// holdAuth checks that req came from the worker its award's lease names,
// on that worker's subject, with the award's token.
func (c *Coordinator) holdAuth(subject string, req HoldRequest) error {
	if req.Worker == "" || subject != HoldSubject(c.id, req.Worker) {
		return errors.New("a hold asked on another worker's subject")
	}
	c.mu.Lock()
	w, ok := c.waiting[req.Award]
	var l Lease
	if ok {
		l = w.lease
	}
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("award %s of task %s is not being waited for", req.Award, req.Key)
	}
	if l.Award != req.Award || l.Key != req.Key || l.Worker != req.Worker {
		return fmt.Errorf("task %s: %w for award %s of %s", req.Key, ErrNoLease, req.Award, req.Worker)
	}
	if subtle.ConstantTimeCompare([]byte(TokenHash(req.Token)), []byte(l.TokenHash)) != 1 {
		return fmt.Errorf("task %s: %w: the award's token is wrong", req.Key, ErrNoLease)
	}
	return nil
}

// holdsOpen and holdsClose tell the server of an award's start and end.
func (c *Coordinator) holdsOpen(key, award string) {
	if c.opts.Holds != nil {
		c.opts.Holds.Open(key, award)
	}
}

func (c *Coordinator) holdsClose(award string, charge bool) {
	if c.opts.Holds != nil {
		c.opts.Holds.Close(award, charge)
	}
}

// holdsKey is the context key of an Exec's hold client (HoldsFor).
type holdsKey struct{}

// Holds asks the coordinator of one award for the holds of its task's
// model calls.
type Holds struct {
	nc      *nats.Conn
	subject string
	base    HoldRequest
	// wait bounds how long a request is sent again while nobody answers.
	wait time.Duration
	// seq numbers the requests (HoldRequest.ID).
	seq atomic.Int64
}

// HoldsFor is the hold client of the task ctx is an Exec's for, nil when
// its offer carries no budget (no limit applies: nothing is held) or
// outside an Exec.
func HoldsFor(ctx context.Context) *Holds {
	h, _ := ctx.Value(holdsKey{}).(*Holds)
	return h
}

// withHolds is ctx carrying the hold client of assignment as run by worker
// on nc, when its offer carries a budget.
func withHolds(ctx context.Context, nc *nats.Conn, worker string, as Assignment) context.Context {
	if as.Budget == nil || nc == nil {
		return ctx
	}
	return context.WithValue(ctx, holdsKey{}, &Holds{
		nc: nc, subject: HoldSubject(as.Coordinator, worker),
		base: HoldRequest{Key: as.Key(), Award: as.Award, Worker: worker, Token: as.Token},
		wait: max(as.Lease, time.Second),
	})
}

// ErrNoHold says the coordinator could not be reached for a hold: the
// call is not made.
var ErrNoHold = errors.New("the coordinator could not be reached to hold the call's cost")

// ErrNoSettle says the coordinator could not be reached to settle a hold:
// it charges the hold what it held when the award ends, or reckons the
// call's cost with the task's result.
var ErrNoSettle = errors.New("the coordinator could not be reached to settle the call's cost")

// Hold asks the coordinator to hold need dollars, the worst case of a call
// to model. It returns the hold's name when granted, the refusal when the
// call could cross a budget, or an error (ErrNoHold when nobody answered
// within the lease, or the coordinator refused the request itself).
func (h *Holds) Hold(ctx context.Context, model string, need float64) (string, *BudgetRefusal, error) {
	req := h.base
	req.Op, req.Model, req.Need = HoldOpHold, model, need
	req.ID = h.nextID()
	r, err := h.ask(ctx, req, ErrNoHold)
	if err != nil {
		return "", nil, err
	}
	if r.Refusal != nil {
		return "", r.Refusal, nil
	}
	if !r.Granted || r.Hold == "" {
		return "", nil, errors.New("the coordinator granted no hold")
	}
	return r.Hold, nil, nil
}

// Settle says the call of hold cost usd (unknown: its price was unknown).
// A settle that does not arrive (ErrNoSettle) costs nothing more than the
// hold: the coordinator releases the hold when the result comes and
// reckons the result's figures, or charges what it held when the award
// ends otherwise.
func (h *Holds) Settle(ctx context.Context, hold string, usd float64, unknown bool) error {
	req := h.base
	req.Op, req.Hold, req.USD, req.Unknown = HoldOpSettle, hold, usd, unknown
	if math.IsNaN(usd) || math.IsInf(usd, 0) {
		req.USD = 0
	}
	return h.settle(ctx, req)
}

// End settles hold as a call made through a budget.Ledger ends: with what
// it cost (known: false when its price was unknown), or, when it was not
// charged (it failed), released (Release).
func (h *Holds) End(ctx context.Context, hold string, usd float64, known, charged bool) error {
	if !charged {
		return h.Release(ctx, hold)
	}
	return h.Settle(ctx, hold, usd, !known)
}

// Release settles hold for a call that failed: it costs nothing and is not
// counted, as a local call that failed is not.
func (h *Holds) Release(ctx context.Context, hold string) error {
	req := h.base
	req.Op, req.Hold, req.Failed = HoldOpSettle, hold, true
	return h.settle(ctx, req)
}

func (h *Holds) settle(ctx context.Context, req HoldRequest) error {
	req.ID = h.nextID()
	_, err := h.ask(context.WithoutCancel(ctx), req, ErrNoSettle)
	return err
}

// nextID names a new request, unique within the award.
func (h *Holds) nextID() string { return strconv.FormatInt(h.seq.Add(1), 10) }

// ask sends req until the coordinator answers, ctx ends or h.wait passes;
// noAnswer is the error then.
func (h *Holds) ask(ctx context.Context, req HoldRequest, noAnswer error) (HoldReply, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return HoldReply{}, err
	}
	giveUp := time.Now().Add(h.wait)
	pause := 20 * time.Millisecond
	for {
		rctx, cancel := context.WithTimeout(ctx, min(2*time.Second, max(time.Until(giveUp), 50*time.Millisecond)))
		m, err := h.nc.RequestWithContext(rctx, h.subject, data)
		cancel()
		if err == nil {
			var r HoldReply
			if err := json.Unmarshal(m.Data, &r); err != nil {
				return HoldReply{}, fmt.Errorf("decode hold reply: %w", err)
			}
			if r.Error != "" {
				return r, fmt.Errorf("the coordinator refused the %s: %s", req.Op, strings.TrimPrefix(r.Error, "refused: "))
			}
			return r, nil
		}
		if ctx.Err() != nil || time.Now().After(giveUp) {
			return HoldReply{}, fmt.Errorf("%w: %v", noAnswer, err)
		}
		select {
		case <-ctx.Done():
			return HoldReply{}, fmt.Errorf("%w: %v", noAnswer, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}
