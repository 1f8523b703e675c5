package budget

import (
	"context"
	"errors"
	"math"
	"testing"
)

func TestAllowanceIsTheLeastLeft(t *testing.T) {
	l := New(0)
	ctx := l.Scope(context.Background(), "3", "3 (T)", 0)
	if _, ok := l.AllowanceFor(ctx); ok {
		t.Fatal("an allowance without a budget")
	}
	l.Restore(Spent{Run: 1, Plan: 0.5, Tasks: map[string]float64{"3": 0.25}})
	l.SetLimits(3, 1)
	ctx = l.Scope(context.Background(), "3", "3 (T)", 2)
	a, ok := l.AllowanceFor(ctx)
	if !ok || a.Scope != ScopePlan || math.Abs(a.USD-0.5) > 1e-9 || a.Limit != 1 {
		t.Fatalf("AllowanceFor = %+v, %v; want the plan's $0.50 left", a, ok)
	}
	ctx = l.Scope(context.Background(), "3", "3 (T)", 0.5)
	if a, _ := l.AllowanceFor(ctx); a.Scope != ScopeTask || math.Abs(a.USD-0.25) > 1e-9 {
		t.Fatalf("AllowanceFor = %+v; want the task's $0.25 left", a)
	}
}

func TestAllowanceHoldsEveryCall(t *testing.T) {
	l := New(0)
	// The task's own tag, read again from the plan, is the coordinator's
	// business: the allowance stands in for it.
	l.Enter("1", "1 (Alpha)", 0.3)
	ctx := l.ScopeAllowance(context.Background(), "1", "1 (Alpha)", Allowance{USD: 1, Scope: ScopeTask, Limit: 1.3, Spent: 0.3})
	// A task handed out beside it has its own allowance.
	other := l.ScopeAllowance(context.Background(), "2", "2 (Beta)", Allowance{USD: 0.1, Scope: ScopeTask, Limit: 0.1})
	if err := l.CheckFor(ctx, "m", 0.6, true); err != nil {
		t.Fatalf("a call within the allowance was refused: %v", err)
	}
	l.ChargeFor(ctx, 0.6, true)
	err := l.CheckFor(ctx, "m", 0.5, true)
	var e *Error
	if !errors.As(err, &e) || e.Scope != ScopeTask || e.Limit != 1.3 || math.Abs(e.Spent-0.9) > 1e-9 || e.TaskKey != "1" {
		t.Fatalf("Check past the allowance = %v, want the task's $1.30 named with $0.90 spent", err)
	}
	if err := l.CheckFor(ctx, "m", 0, false); !errors.As(err, &e) || !e.NoPrice {
		t.Fatalf("a call of unknown price under an allowance = %v, want refused", err)
	}
	if err := l.CheckFor(other, "m", 0.05, true); err != nil {
		t.Fatalf("task 2's call within its own allowance was refused: %v", err)
	}
	if err := l.CheckFor(other, "m", 0.2, true); !errors.As(err, &e) || e.TaskKey != "2" {
		t.Fatalf("task 2's call past its own allowance = %v, want refused", err)
	}
	l.ChargeFor(ctx, 0, false)
	if usd, calls, unknown := l.ScopeSpent(ctx); math.Abs(usd-0.6) > 1e-9 || calls != 2 || unknown != 1 {
		t.Fatalf("ScopeSpent = %v, %d, %d; want $0.60 over 2 calls, 1 unpriced", usd, calls, unknown)
	}
	if usd, calls, _ := l.ScopeSpent(other); usd != 0 || calls != 0 {
		t.Fatalf("task 2 spent %v over %d calls, want nothing", usd, calls)
	}
	hostile := l.ScopeAllowance(context.Background(), "3", "3", Allowance{USD: math.NaN(), Scope: "hostile"})
	if err := l.CheckFor(hostile, "m", 0.01, true); !errors.As(err, &e) || e.Scope != ScopeTask {
		t.Fatalf("a NaN allowance let a call through: %v", err)
	}
}

func TestAwardNeverTrustsTheFigures(t *testing.T) {
	a := Allowance{USD: 0.5, Scope: ScopeRun, Limit: 1}
	for _, tc := range []struct {
		usd     float64
		unknown int
		limited bool
		charged float64
		unpaid  int
		fixed   bool
	}{
		{0.2, 0, true, 0.2, 0, false},
		{-3, 0, true, 0, 0, true},
		{1e300, 0, true, 0.5, 0, true},
		{math.Inf(1), 0, true, 0.5, 0, true},
		{math.NaN(), 0, true, 0.5, 0, true},
		{0.1, -4, true, 0.1, 0, true},
		{2e6, 0, false, 0, 1, true},
		{math.NaN(), 2, false, 0, 3, true},
	} {
		l := New(0)
		got, fixed := l.Award(context.Background(), a, tc.limited, tc.usd, tc.unknown)
		s := l.Spent()
		if got != tc.charged || fixed != tc.fixed || s.Run != tc.charged || s.Unknown != tc.unpaid {
			t.Errorf("Award(%v, %d, limited %v) = %v, %v, spent %+v; want %v, %v, %d unknown", tc.usd, tc.unknown, tc.limited, got, fixed, s, tc.charged, tc.fixed, tc.unpaid)
		}
	}
}

// TestAllowanceSpentLeavesHoldsOut: the allowance of a task whose calls
// are each held in the ledger leaves out what other calls under way hold,
// which AllowanceFor takes off.
func TestAllowanceSpentLeavesHoldsOut(t *testing.T) {
	l := New(1)
	l.ChargeFor(l.Scope(context.Background(), "1", "1", 0), 0.25, true)
	end, err := l.Begin(l.Scope(context.Background(), "1", "1", 0), "m", 0.5, true)
	if err != nil {
		t.Fatal(err)
	}
	defer end(0, true, false)
	ctx := l.Scope(context.Background(), "2", "2", 0)
	if a, _ := l.AllowanceFor(ctx); math.Abs(a.USD-0.25) > 1e-9 {
		t.Errorf("AllowanceFor = %+v, want $0.25: spent and held taken off", a)
	}
	if a, ok := l.AllowanceSpentFor(ctx); !ok || math.Abs(a.USD-0.75) > 1e-9 || a.Scope != ScopeRun || math.Abs(a.Spent-0.25) > 1e-9 {
		t.Errorf("AllowanceSpentFor = %+v, %v; want the run's $0.75 left of what was spent", a, ok)
	}
}
