package chat

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/internal/price"
	"github.com/weavehq/weave/plugins"
)

// countingProvider answers every call with 1,000 tokens in and out.
type countingProvider struct{ calls int }

func (p *countingProvider) Complete(context.Context, plugins.ChatRequest, func(model.Delta)) (plugins.ChatResponse, error) {
	p.calls++
	return plugins.ChatResponse{Model: "m", Usage: plugins.Usage{InputTokens: 1000, OutputTokens: 1000}}, nil
}

// TestDoorHoldsRemoteCallsFirst: a call of a task handed out by a
// coordinator elsewhere is made only once the coordinator's ledger holds
// its worst case: a refusal there stops it (kept as the task's refusal),
// no answer stops it (fail closed), and a granted hold is settled with
// what the call cost.
func TestDoorHoldsRemoteCallsFirst(t *testing.T) {
	pr := pricing{table: price.NewTable(map[string]price.Price{"m": {Input: 10, Output: 100}}), model: "m", maxTokens: 1000}
	ledger := budget.New(0)
	allow := budget.Allowance{USD: 5, Scope: budget.ScopeRun, Limit: 5}
	req := plugins.ChatRequest{Messages: []plugins.ChatMessage{{Role: "user", Content: "hi"}}}
	for _, tc := range []struct {
		name    string
		holder  budget.Holder
		calls   int
		refusal bool
	}{
		{"refused", func(context.Context, string, float64) (func(float64, bool, bool), error) {
			return nil, &budget.Error{Scope: budget.ScopeRun, Limit: 1, Spent: 0.99, Need: 0.1}
		}, 0, true},
		{"unreachable", func(context.Context, string, float64) (func(float64, bool, bool), error) {
			return nil, errors.New("the coordinator could not be reached to hold the call's cost")
		}, 0, false},
	} {
		p := &countingProvider{}
		ctx := ledger.ScopeHeld(context.Background(), tc.name, tc.name, allow, tc.holder)
		_, err := withBudget(p, ledger, pr).Complete(ctx, req, nil)
		if err == nil || p.calls != tc.calls {
			t.Errorf("%s: err %v, %d calls; want the call refused and not made", tc.name, err, p.calls)
		}
		if _, ok := budget.As(err); ok != tc.refusal {
			t.Errorf("%s: %v is a budget refusal: %v, want %v", tc.name, err, ok, tc.refusal)
		}
		if got := ledger.TrippedFor(tc.name) != nil; got != tc.refusal {
			t.Errorf("%s: refusal kept as the task's: %v, want %v", tc.name, got, tc.refusal)
		}
	}
	if sp := ledger.Spent(); sp.Calls != 0 {
		t.Errorf("refused calls were charged: %+v", sp)
	}
	var asked, settled float64
	p := &countingProvider{}
	ctx := ledger.ScopeHeld(context.Background(), "ok", "ok", allow, func(_ context.Context, _ string, worst float64) (func(float64, bool, bool), error) {
		asked = worst
		return func(usd float64, known, charged bool) { settled = usd }, nil
	})
	if _, err := withBudget(p, ledger, pr).Complete(ctx, req, nil); err != nil || p.calls != 1 {
		t.Fatalf("granted: %v, %d calls", err, p.calls)
	}
	// 1,000 tokens in at $10 and out at $100 a million.
	if asked <= 0.1 || math.Abs(settled-0.11) > 1e-9 {
		t.Errorf("held $%v, settled $%v; want the worst case (over $0.10) held and $0.11 settled", asked, settled)
	}
}
