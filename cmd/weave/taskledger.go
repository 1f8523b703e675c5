package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/budget"
)

// A worker's run of a task (a start-work child of `weave worker`) is held
// to what the coordinator allows the task to spend, and says what it
// spent: the worker writes the allowance into a file it names with the
// hidden --task-ledger flag, and the run writes its figures back into the
// same file when it ends. The file lies outside the task's worktree, where
// the task's own tools cannot reach it.

// taskLedger is the file's content.
type taskLedger struct {
	// Allowance, when set, is what the task may spend (the offer's).
	Allowance *budget.Allowance `json:"allowance,omitempty"`
	// Spent is what the run's model calls cost, written when it ends.
	Spent *workers.Spend `json:"spent,omitempty"`
}

// readTaskLedger reads the task ledger file at path.
func readTaskLedger(path string) (taskLedger, error) {
	var tl taskLedger
	data, err := os.ReadFile(path)
	if err != nil {
		return tl, fmt.Errorf("read the task's ledger: %w", err)
	}
	if err := json.Unmarshal(data, &tl); err != nil {
		return tl, fmt.Errorf("read the task's ledger %s: %w", path, err)
	}
	return tl, nil
}

// writeTaskLedger writes tl to path.
func writeTaskLedger(path string, tl taskLedger) error {
	data, err := json.Marshal(tl)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write the task's ledger: %w", err)
	}
	return nil
}

// applyTaskLedger holds the run's ledger l to the allowance in the file at
// path, if it names one.
func applyTaskLedger(path string, l *budget.Ledger) error {
	tl, err := readTaskLedger(path)
	if err != nil {
		return err
	}
	if tl.Allowance != nil && l != nil {
		l.SetAllowance(*tl.Allowance)
	}
	return nil
}

// reportTaskLedger writes what the run spent into the file at path: the
// figures of its ledger l (the run started from a worktree without a
// state, so they are this run's alone) and the refusal that paused it.
func reportTaskLedger(path string, l *budget.Ledger, paused bool) error {
	tl, err := readTaskLedger(path)
	if err != nil {
		return err
	}
	tl.Spent = taskSpend(l, paused)
	return writeTaskLedger(path, tl)
}

// taskAllowance is the ledger's allowance of an offer's (nil: none). A
// worker's run of a task, in a child process or in its own, holds its
// ledger to it (budget.Ledger.SetAllowance).
func taskAllowance(b *workers.Allowance) *budget.Allowance {
	if b == nil {
		return nil
	}
	return &budget.Allowance{USD: b.USD, Scope: budget.Scope(b.Scope), Limit: b.Limit, Spent: b.Spent, Unpriced: b.Unpriced}
}

// taskSpend is what a worker's run of a task spent, from its ledger l, for
// its result (workers.ReportSpend); paused says the run paused, on the
// refusal l kept.
func taskSpend(l *budget.Ledger, paused bool) *workers.Spend {
	s := &workers.Spend{}
	if l == nil {
		return s
	}
	sp := l.Spent()
	s.USD, s.Unknown, s.Calls = sp.Run, sp.Unknown, sp.Calls
	if e := l.Tripped(); e != nil && paused {
		s.Stop = &workers.BudgetStop{Model: e.Model, Need: e.Need, NoPrice: e.NoPrice}
	}
	return s
}
