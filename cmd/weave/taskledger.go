package main

import (
	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/run"
)

// A worker's run of a task is held to what the coordinator allows the task
// to spend (the offer's allowance, which the worker's ledger holds the
// task's calls to: budget.Ledger.ScopeAllowance), and says what it spent
// with its result (workers.ReportSpend), which the coordinator charges,
// capped by the allowance, to its own ledger.

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
