package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func TestLedgerChecksTheTightestBudget(t *testing.T) {
	l := New(0)
	if err := l.Check("m", 100, true); err != nil {
		t.Fatalf("Check without a budget = %v, want nil", err)
	}
	if err := l.Check("m", 0, false); err != nil {
		t.Fatalf("Check of an unpriced model without a budget = %v, want nil", err)
	}
	l.Restore(Spent{Run: 1, Plan: 1, Tasks: map[string]float64{"3": 0.5}})
	l.SetLimits(10, 5)
	l.Enter("3", "3 (Title)", 0.6)
	err := l.Check("m", 0.2, true)
	var e *Error
	if !errors.As(err, &e) || e.Scope != ScopeTask || e.Spent != 0.5 || e.Limit != 0.6 {
		t.Fatalf("Check = %v, want the task's budget refusing", err)
	}
	if l.Tripped() != e {
		t.Errorf("Tripped = %v, want the refusal kept", l.Tripped())
	}
	if err := l.Check("m", 0.1, true); err != nil {
		t.Errorf("Check of a call that fits = %v", err)
	}
	l.Charge(0.1, true)
	l.Charge(0, false)
	s := l.Spent()
	if s.Run != 1.1 || s.Plan != 1.1 || s.Tasks["3"] != 0.6 || s.Unknown != 1 {
		t.Errorf("Spent = %+v", s)
	}
	if _, known := l.TaskSpent("3"); known {
		t.Error("TaskSpent is known after a call of unknown price")
	}
	l.Enter("4", "4 (Next)", 0)
	if l.Tripped() != nil {
		t.Error("a refusal outlives its task")
	}
	if err := l.Check("m", 4, true); !errors.As(err, &e) || e.Scope != ScopePlan {
		t.Errorf("Check past the plan's budget = %v, want the plan's refusing", err)
	}
	if err := l.Check("m", 0, false); !errors.As(err, &e) || !e.NoPrice {
		t.Errorf("Check of an unpriced model under a budget = %v, want a refusal naming the price", err)
	}
}

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{{"5", 5}, {"$2", 2}, {" $0.75 ", 0.75}, {"2.50", 2.5}, {"0", -1}, {"-1", -1}, {"lots", -1}, {"NaN", -1}, {"$", -1}} {
		got, err := ParseAmount(tc.in)
		if err != nil {
			got = -1
		}
		if got != tc.want {
			t.Errorf("ParseAmount(%q) = %v (%v), want %v", tc.in, got, err, tc.want)
		}
	}
}

func ExampleError() {
	e := &Error{Scope: ScopeRun, Limit: 5, Spent: 4.95, Need: 0.12, Run: 4.95, Plan: 4.95}
	fmt.Println(e)
	// Output: budget: the next model call could cross the run's budget of $5.00: $4.95 of it is spent, and the call could cost up to $0.1200 (spent: run $4.95, plan $4.95)
}

func TestScopedTasksAreCheckedAndChargedApart(t *testing.T) {
	l := New(0)
	l.Restore(Spent{})
	l.SetLimits(10, 0)
	one := l.Scope(context.Background(), "1", "1 (One)", 0.3)
	two := l.Scope(context.Background(), "2", "2 (Two)", 5)
	// A task entered the lone-run way is not what scoped calls are for.
	l.Enter("9", "9 (Lone)", 0.01)
	end, err := l.Begin(one, "m", 0.2, true)
	if err != nil {
		t.Fatalf("Begin of task 1's first call = %v", err)
	}
	end(0.2, true, true)
	for range 3 {
		end, err := l.Begin(two, "m", 0.2, true)
		if err != nil {
			t.Fatalf("Begin of task 2's call = %v; task 1's spending is not task 2's", err)
		}
		end(0.2, true, true)
	}
	err = l.CheckFor(one, "m", 0.2, true)
	var e *Error
	if !errors.As(err, &e) || e.Scope != ScopeTask || e.TaskKey != "1" || e.Spent != 0.2 {
		t.Fatalf("task 1's second call = %v, want its own budget refusing with its own $0.20", err)
	}
	if l.TrippedFor("1") != e || l.TrippedFor("2") != nil {
		t.Errorf("TrippedFor(1) = %v, TrippedFor(2) = %v; want the refusal kept for task 1 alone", l.TrippedFor("1"), l.TrippedFor("2"))
	}
	s := l.Spent()
	if s.Tasks["1"] != 0.2 || s.Tasks["2"] != 0.6 || s.Tasks["9"] != 0 || s.Run != 0.8 {
		t.Errorf("Spent = %+v, want task 1 $0.20, task 2 $0.60, the run $0.80", s)
	}
	if Carry(context.Background(), one).Value(taskCtx{}) == nil {
		t.Error("Carry lost the task")
	}
	if l.Scope(context.Background(), "1", "1 (One)", 1); l.TrippedFor("1") != nil {
		t.Error("a task scoped again keeps an old refusal")
	}
}

// TestConcurrentCallsCannotCrossTheRunBudgetTogether has calls of many
// tasks at once each fit the run's budget alone: the worst cases held
// while they are under way keep them within it together.
func TestConcurrentCallsCannotCrossTheRunBudgetTogether(t *testing.T) {
	l := New(1)
	var wg sync.WaitGroup
	var refused atomic.Int64
	start := make(chan struct{})
	for i := range 8 {
		ctx := l.Scope(context.Background(), fmt.Sprint(i), fmt.Sprint(i), 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 5 {
				end, err := l.Begin(ctx, "m", 0.1, true)
				if err != nil {
					refused.Add(1)
					return
				}
				_ = l.Spent()
				end(0.1, true, true)
			}
		}()
	}
	close(start)
	wg.Wait()
	s := l.Spent()
	if s.Run > 1+1e-9 {
		t.Errorf("the run spent %v of its $1 budget", s.Run)
	}
	if refused.Load() == 0 || l.Tripped() == nil {
		t.Error("no call was refused; 40 calls of $0.10 cannot fit $1")
	}
	sum := 0.0
	for _, v := range s.Tasks {
		sum += v
	}
	if d := sum - s.Run; d > 1e-9 || d < -1e-9 {
		t.Errorf("the tasks' spending %v is not the run's %v", sum, s.Run)
	}
}
