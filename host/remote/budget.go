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
// can never make the figures grow past it, nor shrink them.

// allowance sets o's budget from the ledger, for the task ctx carries;
// limited is false when no budget holds.
func (p *Pool) allowance(ctx context.Context, o *workers.Offer) (budget.Allowance, bool) {
	if p.ledger == nil {
		return budget.Allowance{}, false
	}
	a, ok := p.ledger.AllowanceFor(ctx)
	if ok {
		o.Budget = &workers.Allowance{USD: a.USD, Scope: string(a.Scope), Limit: a.Limit, Spent: a.Spent, Unpriced: a.Unpriced}
	}
	return a, ok
}

// charge adds what the worker says task o spent to the ledger, as the
// task's, and returns the budget's refusal when the worker stopped the
// task on one that the ledger confirms (the run pauses on it, as on a
// local task's); nil otherwise. A stop the ledger does not confirm leaves
// the task to fail as any other failure does.
func (p *Pool) charge(ctx context.Context, o workers.Offer, res workers.Result, allow budget.Allowance, limited bool) error {
	if p.ledger == nil || res.Spend == nil {
		return nil
	}
	s := res.Spend
	charged, corrected := p.ledger.Award(ctx, allow, limited, s.USD, s.Unknown)
	if corrected {
		p.logger.Warn("workers: a worker's figures for what its task spent were not taken as they were", "task", o.Key(), "worker", res.Worker, "award", res.Award,
			"said_usd", s.USD, "said_unknown", s.Unknown, "charged_usd", charged, "allowance_usd", allow.USD, "limited", limited)
	}
	if s.Stop == nil {
		return nil
	}
	if err := p.ledger.CheckFor(ctx, s.Stop.Model, s.Stop.Need, !s.Stop.NoPrice); err != nil {
		return fmt.Errorf("task %s on worker %s: %w", o.Key(), res.Worker, err)
	}
	return nil
}
