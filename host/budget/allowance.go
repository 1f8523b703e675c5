package budget

import (
	"context"
	"math"

	"github.com/weavehq/weave/internal/price"
)

// Allowance is what a task carried out elsewhere (a worker joined over the
// bus) may still spend on models: the least of what is left of the run's,
// the plan's and the task's budgets when it was handed out. The worker's
// ledger holds every call of its run of the task to it (ScopeAllowance), as
// a task budget holds a local task's calls, and the coordinator charges
// what the worker says it spent, never more than the allowance (Award).
type Allowance struct {
	// USD is what may still be spent, in US dollars.
	USD float64 `json:"usd"`
	// Scope is the budget that leaves least; Limit is that budget and
	// Spent what it held (calls under way included) when the allowance
	// was reckoned, so that a refusal on the worker names the budget the
	// person set.
	Scope Scope   `json:"scope"`
	Limit float64 `json:"limit"`
	Spent float64 `json:"spent"`
	// Unpriced counts the calls of unknown price behind Spent: when it is
	// not 0, what was spent is more than Spent says.
	Unpriced int `json:"unpriced,omitempty"`
}

// maxClaim is the most a worker may say one task cost when no budget
// bounds it: more is not a figure, and is counted as a call of unknown
// price.
const maxClaim = 1e6

// AllowanceFor is what the calls made with ctx may still spend: the least
// of what is left of the run's, the plan's and the task's budgets, less
// what calls under way hold; false when no budget holds.
func (l *Ledger) AllowanceFor(ctx context.Context) (Allowance, bool) {
	return l.allowanceFor(ctx, true)
}

// AllowanceSpentFor is AllowanceFor reckoned from what was spent only, not
// less what calls under way hold: the allowance of a task whose every
// call is held in this ledger before it is made (Begin, beside every call
// under way, exactly). Less the holds of calls that may yet end cheaply,
// it would have the task's worker refuse a call this ledger would hold.
func (l *Ledger) AllowanceSpentFor(ctx context.Context) (Allowance, bool) {
	return l.allowanceFor(ctx, false)
}

// allowanceFor is AllowanceFor, less what calls under way hold when
// withHeld.
func (l *Ledger) allowanceFor(ctx context.Context, withHeld bool) (Allowance, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.taskFor(ctx)
	held, heldTask := l.held, 0.0
	if t != nil {
		heldTask = l.heldTask[t.key]
	}
	if !withHeld {
		held, heldTask = 0, 0
	}
	var best Allowance
	found := false
	consider := func(scope Scope, limit, spent float64) {
		left := max(0, limit-spent)
		if !found || left < best.USD {
			best = Allowance{USD: left, Scope: scope, Limit: limit, Spent: spent}
			found = true
		}
	}
	if t != nil && t.limit > 0 {
		consider(ScopeTask, t.limit, l.spent.Tasks[t.key]+heldTask)
	}
	if l.inPlan && l.plan > 0 {
		consider(ScopePlan, l.plan, l.spent.Plan+held)
	}
	if l.run > 0 {
		consider(ScopeRun, l.run, l.spent.Run+held)
	}
	if t != nil && t.allow != nil {
		a := *t.allow
		consider(a.Scope, a.Limit, a.Spent+t.spent+heldTask)
	}
	if !found {
		return Allowance{}, false
	}
	best.USD = floorNano(best.USD)
	best.Unpriced = l.spent.Unknown
	if best.Scope == ScopeTask && t != nil {
		best.Unpriced = l.spent.TasksUnknown[t.key]
	}
	return best, true
}

// floorNano rounds an amount to the figures' precision, down, so that an
// allowance never exceeds what is left.
func floorNano(usd float64) float64 { return math.Floor(usd*1e9) / 1e9 }

// ScopeAllowance is Scope for a task a coordinator elsewhere handed out
// with allowance a: the calls made with the context it returns may
// together cost no more than a.USD, and a call of unknown price is
// refused, as under any budget. The allowance stands in for the task's
// own budget, which the coordinator reckoned in (its tag, its raises, what
// it spent before), so that a tag read again from the plan does not hold
// the task to its first figure; the run's and the plan's budgets of this
// ledger (the worker's own config) hold beside it. A refusal names a's
// budget, as the coordinator would. Tasks handed out at once each go with
// their own.
func (l *Ledger) ScopeAllowance(ctx context.Context, key, label string, a Allowance) context.Context {
	if !(a.USD >= 0) || math.IsInf(a.USD, 0) {
		a.USD = 0
	}
	if a.Scope != ScopeRun && a.Scope != ScopePlan {
		a.Scope = ScopeTask
	}
	l.mu.Lock()
	delete(l.trippedBy, key)
	l.mu.Unlock()
	return context.WithValue(ctx, taskCtx{}, &current{key: key, label: label, allow: &a})
}

// ScopeSpent is what the calls made with ctx's task (Scope,
// ScopeAllowance) cost since it was scoped: dollars of the calls of known
// price, how many calls were charged, and how many had no known price.
func (l *Ledger) ScopeSpent(ctx context.Context) (usd float64, calls, unknown int) {
	t, ok := ctx.Value(taskCtx{}).(*current)
	if !ok {
		return 0, 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return price.Round(t.spent), t.calls, t.unknown
}

// Award charges what a task carried out elsewhere under allowance a
// (limited: false when none held) says its calls cost: usd for the calls
// of known price and unknown calls of unknown price. A worker is never
// trusted with the figures: an amount below zero or not a number counts as
// nothing (or, not a number, as the whole allowance), and no more than the
// allowance is ever charged, however much it says (a task that crossed
// its allowance by one answer is charged the allowance). Without a budget,
// an amount beyond all reason is counted as a call of unknown price.
// Award returns what it charged and whether it had to correct the figures.
func (l *Ledger) Award(ctx context.Context, a Allowance, limited bool, usd float64, unknown int) (charged float64, corrected bool) {
	switch {
	case math.IsNaN(usd) || math.IsInf(usd, 1):
		corrected = true
		if limited {
			usd = a.USD
		} else {
			usd, unknown = 0, unknown+1
		}
	case usd < 0:
		usd, corrected = 0, true
	}
	if limited && usd > a.USD {
		usd, corrected = max(0, a.USD), true
	}
	if !limited && usd > maxClaim {
		usd, unknown, corrected = 0, unknown+1, true
	}
	if unknown < 0 {
		unknown, corrected = 0, true
	}
	if unknown > 1e6 {
		unknown, corrected = 1e6, true
	}
	l.mu.Lock()
	t := l.taskFor(ctx)
	if usd > 0 {
		l.charge(t, usd, true)
	}
	for range unknown {
		l.charge(t, 0, false)
	}
	f := l.charged
	l.mu.Unlock()
	if f != nil && (usd > 0 || unknown > 0) {
		f()
	}
	return usd, corrected
}
