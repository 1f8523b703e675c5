package remote

import (
	"context"
	"fmt"

	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/budget"
)

// The run's budgets reach the workers: an offer carries what the task may
// still spend (the least of what is left of the run's, the plan's and the
// task's budgets, reckoned when the task is offered), the worker's run of
// the task holds each model call to it, and what the worker says the task
// spent is charged to the run's ledger, capped by that allowance: a worker
// can never make the figures grow past it, nor shrink them. Since tasks
// offered together each had the whole remainder, the worker also holds
// each call's worst case in the run's ledger before making it (hold.go),
// and that keeps the shared budgets exact.

// allowance sets o's budget from the ledger, for the task ctx carries;
// limited is false when no budget holds. When the workers hold their calls
// in the ledger (hold.go), it is reckoned from what was spent only: the
// holds, checked there beside every call under way, keep the budgets
// exact, and an allowance less other tasks' calls under way, which may
// end for far less than they hold, would have the worker refuse calls
// the ledger would grant, and fail its task for a budget not crossed.
func (p *Pool) allowance(ctx context.Context, o *workers.Offer) (budget.Allowance, bool) {
	if p.ledger == nil {
		return budget.Allowance{}, false
	}
	a, ok := p.ledger.AllowanceFor(ctx)
	if p.holds != nil {
		a, ok = p.ledger.AllowanceSpentFor(ctx)
	}
	if ok {
		o.Budget = &workers.Allowance{USD: a.USD, Scope: string(a.Scope), Limit: a.Limit, Spent: a.Spent, Unpriced: a.Unpriced}
	}
	return a, ok
}

// charge adds what the worker says task o spent to the ledger, as the
// task's, and returns the budget's refusal when the worker stopped the
// task on one that the ledger confirms (the run pauses on it, as on a
// local task's); nil otherwise. A stop the ledger does not confirm leaves
// the task to fail as any other failure does. Only a task that failed is
// stopped so: one that succeeded lands, whatever call of its was refused
// on the way (its agent went on without it).
//
// A task whose worker held its calls' worst cases (hold.go) was charged
// as its holds were settled: the figures its result says are reckoned with
// those, never charged twice, and what they say beyond them (a settle
// that never arrived) is charged only as far as the allowance and every
// budget still leave room. A hold the ledger refused confirms the stop.
func (p *Pool) charge(ctx context.Context, o workers.Offer, res workers.Result, allow budget.Allowance, limited bool) error {
	if p.ledger == nil {
		return nil
	}
	var held reckoning
	hadHolds := false
	if p.holds != nil && res.Award != "" {
		held, hadHolds = p.holds.reckoned(res.Award)
	}
	s := res.Spend
	if s != nil {
		usd, unknown := s.USD, s.Unknown
		a := allow
		if hadHolds && limited {
			usd, unknown = usd-held.usd, unknown-held.unknown
			a.USD = max(0, allow.USD-held.usd)
			if left, ok := p.ledger.AllowanceFor(ctx); ok {
				a.USD = min(a.USD, left.USD)
			}
			if !(usd > 1e-12) {
				usd = 0
			}
			unknown = max(0, unknown)
		}
		if usd != 0 || unknown != 0 || !hadHolds {
			charged, corrected := p.ledger.Award(ctx, a, limited, usd, unknown)
			if corrected {
				p.logger.Warn("workers: a worker's figures for what its task spent were not taken as they were", "task", o.Key(), "worker", res.Worker, "award", res.Award,
					"said_usd", s.USD, "said_unknown", s.Unknown, "held_usd", held.usd, "charged_usd", charged, "allowance_usd", a.USD, "limited", limited)
			}
		}
	}
	if res.Error == "" {
		return nil
	}
	if held.refused != nil {
		return fmt.Errorf("task %s on worker %s: %w", o.Key(), res.Worker, held.refused)
	}
	if s == nil || s.Stop == nil {
		return nil
	}
	if err := p.ledger.CheckFor(ctx, s.Stop.Model, s.Stop.Need, !s.Stop.NoPrice); err != nil {
		return fmt.Errorf("task %s on worker %s: %w", o.Key(), res.Worker, err)
	}
	return nil
}
