package budget

import (
	"context"
	"testing"
)

// TestHoldForAsksNothingOfAFreeCall: a call whose worst case is nothing
// (a free model) asks the coordinator for no hold, which it would refuse
// as no amount; a call that may cost something is asked.
func TestHoldForAsksNothingOfAFreeCall(t *testing.T) {
	l := New(0)
	asked := 0
	ctx := l.ScopeHeld(context.Background(), "1", "1", Allowance{USD: 1, Scope: ScopeRun, Limit: 1}, func(context.Context, string, float64) (func(float64, bool, bool), error) {
		asked++
		return func(float64, bool, bool) {}, nil
	})
	settle, err := l.HoldFor(ctx, "free", 0)
	if err != nil || settle == nil {
		t.Fatalf("a free call: %v", err)
	}
	settle(0, true, true)
	if asked != 0 {
		t.Errorf("a free call asked %d holds, want none", asked)
	}
	if _, err := l.HoldFor(ctx, "m", 0.1); err != nil || asked != 1 {
		t.Errorf("a $0.10 call: %v, %d holds asked; want one", err, asked)
	}
}
