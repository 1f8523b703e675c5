package budget

import (
	"errors"
	"fmt"
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
