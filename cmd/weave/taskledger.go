package main

import (
	"context"

	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/run"
)

// A worker's run of a task is held to what the coordinator allows the task
// to spend (the offer's allowance, which the worker's ledger holds the
// task's calls to: budget.Ledger.ScopeAllowance), and says what it spent
// with its result (workers.ReportSpend), which the coordinator charges,
// capped by the allowance, to its own ledger. Before each model call it
// asks the coordinator to hold the call's worst case in that ledger
// (taskHolder), so that tasks running at once keep the shared budgets.

// taskAllowance is the ledger's allowance of an offer's (nil: none).
func taskAllowance(b *workers.Allowance) *budget.Allowance {
	if b == nil {
		return nil
	}
	return &budget.Allowance{USD: b.USD, Scope: budget.Scope(b.Scope), Limit: b.Limit, Spent: b.Spent, Unpriced: b.Unpriced}
}

// taskSpend is what a worker's run of a task spent, for its result.
func taskSpend(s run.HandedSpend) workers.Spend {
	out := workers.Spend{USD: s.USD, Calls: s.Calls, Unknown: s.Unknown}
	if e := s.Stop; e != nil {
		out.Stop = &workers.BudgetStop{Model: e.Model, Need: e.Need, NoPrice: e.NoPrice}
	}
	return out
}

// taskHolder is the budget.Holder of the task ctx is an Exec's for: each
// model call's worst case is held in the coordinator's ledger before the
// call is made, and settled with what it cost. Nil when the offer carries
// no budget: no limit applies and nothing is asked.
func taskHolder(ctx context.Context) budget.Holder {
	h := workers.HoldsFor(ctx)
	if h == nil {
		return nil
	}
	return func(cctx context.Context, model string, worst float64) (func(usd float64, known, charged bool), error) {
		id, refusal, err := h.Hold(cctx, model, worst)
		if err != nil {
			return nil, err
		}
		if r := refusal; r != nil {
			return nil, &budget.Error{Scope: budget.Scope(r.Scope), TaskKey: r.TaskKey, Task: r.Task, Limit: r.Limit, Spent: r.Spent,
				Held: r.Held, Need: r.Need, Model: r.Model, NoPrice: r.NoPrice, Run: r.Run, Plan: r.Plan}
		}
		return func(usd float64, known, charged bool) {
			_ = h.End(cctx, id, usd, known, charged)
		}, nil
	}
}
