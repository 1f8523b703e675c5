package remote

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"

	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/budget"
)

// holds keeps the holds that workers ask before each model call of a task
// offered with a budget (bus/workers' hold.go), in the run's own ledger:
// each is Ledger.Begin against the run's, the plan's and the task's
// budgets, beside every other call under way, local or remote. So the
// shared budgets hold exactly, however many tasks run at once and
// wherever. A settle is charged, never more than its hold nor less than
// nothing; a hold not settled when its award ends is released, or charged
// what it held when its worker may still be making the call (Close).
type holds struct {
	ledger *budget.Ledger
	logger *slog.Logger

	mu sync.Mutex
	// tasks holds the budget scope of each task on offer with a budget, by
	// key: the context its slot's Run was given (budget.Ledger.Scope).
	tasks map[string]context.Context
	// awards are the awards of those tasks whose worker may ask holds.
	awards map[string]*awardHolds
	// ended is what the holds of each ended award charged, until the
	// result's figures are reckoned with it (reckoned).
	ended map[string]reckoning
}

// awardHolds is one award's holds.
type awardHolds struct {
	key   string
	scope context.Context
	open  map[string]openHold
	next  int
	sum   reckoning
	// answers are the answers to the last requests, by ID, oldest first
	// in asked (maxAnswers).
	answers map[string]workers.HoldReply
	asked   []string
}

// openHold is a hold granted and not yet settled.
type openHold struct {
	worst float64
	end   func(usd float64, known, charged bool)
}

// reckoning is what an award's holds charged: dollars, calls of unknown
// price, and the ledger's refusal of a hold, if one was refused.
type reckoning struct {
	key     string
	usd     float64
	unknown int
	refused *budget.Error
}

func newHolds(ledger *budget.Ledger, logger *slog.Logger) *holds {
	return &holds{ledger: ledger, logger: logger, tasks: map[string]context.Context{}, awards: map[string]*awardHolds{}, ended: map[string]reckoning{}}
}

// offering registers task key's budget scope while it is on offer; the
// func returned forgets it, and what its awards' holds charged.
func (h *holds) offering(key string, scope context.Context) func() {
	h.mu.Lock()
	h.tasks[key] = scope
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.tasks, key)
		for award, r := range h.ended {
			if r.key == key {
				delete(h.ended, award)
			}
		}
	}
}

// Open implements workers.HoldServer: award's worker may ask holds for
// task key when the task is on offer with a budget.
func (h *holds) Open(key, award string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	scope, ok := h.tasks[key]
	if !ok || h.awards[award] != nil {
		return
	}
	h.awards[award] = &awardHolds{key: key, scope: scope, open: map[string]openHold{}, sum: reckoning{key: key}, answers: map[string]workers.HoldReply{}}
}

// Close implements workers.HoldServer: the award ended; its holds not
// settled are released, charging nothing (its result came), or, when its
// worker may still be making the call (this coordinator stopped the award
// itself, or its lease was lost), charged what they held: within the
// budgets, and never less than the call may cost.
func (h *holds) Close(award string, charge bool) {
	var ends []func()
	defer func() { runEnds(ends) }()
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.awards[award]
	if !ok {
		return
	}
	delete(h.awards, award)
	for _, o := range a.open {
		if charge {
			ends = append(ends, func() { o.end(o.worst, true, true) })
			a.sum.usd += o.worst
			continue
		}
		ends = append(ends, func() { o.end(0, true, false) })
	}
	if len(a.open) > 0 {
		h.logger.Info("workers: holds not settled when the award ended", "task", a.key, "award", award, "holds", len(a.open), "charged", charge)
	}
	h.ended[award] = a.sum
}

// runEnds ends holds in the ledger, outside h.mu: a charge writes the
// run's figures to disk (budget.Ledger.OnCharge), which no other hold
// request should wait behind.
func runEnds(ends []func()) {
	for _, end := range ends {
		end()
	}
}

// maxOpenHolds is how many holds one award may have open at once. A task's
// agent makes its model calls one after another, and its delegated tasks
// a few more at once (tools.max_parallel, 4 by default, a level or two
// deep); more is a worker keeping state, or the budget, from the run's
// other tasks. A hold past it is refused as a request, not by the budget:
// the call is not made and the task fails there.
const maxOpenHolds = 16

// maxAnswers is how many answers an award keeps for requests asked again
// (workers.HoldRequest.ID): a retry comes within seconds of its request.
const maxAnswers = 64

// Serve implements workers.HoldServer, for a request bus/workers has
// authenticated as award's worker's. A request asked again (the same ID)
// is answered as it was, and changes nothing.
func (h *holds) Serve(req workers.HoldRequest) workers.HoldReply {
	var ends []func()
	defer func() { runEnds(ends) }()
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.awards[req.Award]
	if !ok || a.key != req.Key {
		return workers.HoldReply{Error: "no budget holds for award " + req.Award + " of task " + req.Key}
	}
	if r, ok := a.answers[req.ID]; ok && req.ID != "" {
		return r
	}
	r, end := h.serve(a, req)
	if end != nil {
		ends = append(ends, end)
	}
	if req.ID != "" {
		if len(a.asked) >= maxAnswers {
			delete(a.answers, a.asked[0])
			a.asked = a.asked[1:]
		}
		a.answers[req.ID] = r
		a.asked = append(a.asked, req.ID)
	}
	return r
}

// serve answers req for award a, and returns the ledger's end of a hold
// settled, to be called once h.mu is let go. h.mu is held.
func (h *holds) serve(a *awardHolds, req workers.HoldRequest) (workers.HoldReply, func()) {
	switch req.Op {
	case workers.HoldOpHold:
		need := req.Need
		if math.IsNaN(need) || math.IsInf(need, 0) || need <= 0 {
			return workers.HoldReply{Error: "a hold of " + strconv.FormatFloat(need, 'g', -1, 64) + " dollars is not an amount to hold"}, nil
		}
		if len(a.open) >= maxOpenHolds {
			return workers.HoldReply{Error: "award " + req.Award + " holds " + strconv.Itoa(len(a.open)) + " calls under way already, the most one task may"}, nil
		}
		end, err := h.ledger.Begin(a.scope, req.Model, need, true)
		if err != nil {
			e, ok := budget.As(err)
			if !ok {
				return workers.HoldReply{Error: err.Error()}, nil
			}
			if a.sum.refused == nil {
				a.sum.refused = e
			}
			return workers.HoldReply{Refusal: &workers.BudgetRefusal{Scope: string(e.Scope), TaskKey: e.TaskKey, Task: e.Task, Limit: e.Limit,
				Spent: e.Spent, Held: e.Held, Need: e.Need, Model: e.Model, NoPrice: e.NoPrice, Run: e.Run, Plan: e.Plan}}, nil
		}
		a.next++
		id := strconv.Itoa(a.next)
		a.open[id] = openHold{worst: need, end: end}
		return workers.HoldReply{Granted: true, Hold: id}, nil
	case workers.HoldOpSettle:
		o, ok := a.open[req.Hold]
		if !ok {
			return workers.HoldReply{Error: "no hold " + req.Hold + " is open for award " + req.Award}, nil
		}
		delete(a.open, req.Hold)
		if req.Failed {
			return workers.HoldReply{Granted: true, Hold: req.Hold}, func() { o.end(0, true, false) }
		}
		if req.Unknown {
			a.sum.unknown++
			return workers.HoldReply{Granted: true, Hold: req.Hold}, func() { o.end(0, false, true) }
		}
		usd := req.USD
		if math.IsNaN(usd) || usd < 0 {
			usd = 0
		}
		if usd > o.worst {
			h.logger.Warn("workers: a worker settled a hold for more than it held; charged the hold", "task", a.key, "award", req.Award, "worker", req.Worker,
				"said_usd", req.USD, "held_usd", o.worst)
			usd = o.worst
		}
		a.sum.usd += usd
		return workers.HoldReply{Granted: true, Hold: req.Hold}, func() { o.end(usd, true, true) }
	}
	return workers.HoldReply{Error: "unknown hold operation " + strconv.Quote(req.Op)}, nil
}

// reckoned is what the holds of award charged; false when the award had
// no holds kept (its task had no budget, or it ran in this process).
func (h *holds) reckoned(award string) (reckoning, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.ended[award]
	delete(h.ended, award)
	return r, ok
}

var _ workers.HoldServer = (*holds)(nil)
