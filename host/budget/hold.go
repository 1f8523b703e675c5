package budget

import (
	"context"
	"fmt"
)

// Holder holds a model call's worst case (worst dollars, a call to model)
// in the ledger of the coordinator that handed a task out, where the run's
// and the plan's budgets are shared with every other call under way, here
// and on other workers. It returns settle, called once when the call ends
// with what it cost (known: false when its price was unknown; charged:
// false when it failed and costs nothing), or the coordinator's refusal as
// an *Error, or another error when no hold could be had (the coordinator
// could not be reached): the call is then not made.
type Holder func(ctx context.Context, model string, worst float64) (settle func(usd float64, known, charged bool), err error)

// ScopeHeld is ScopeAllowance with h asked to hold every call's worst case
// before it is made (HoldFor): an allowance reckoned when the task was
// handed out is the remainder then, which tasks running at once each had
// whole; the holds keep the shared budgets exact. The allowance still
// holds here, a second guard.
func (l *Ledger) ScopeHeld(ctx context.Context, key, label string, a Allowance, h Holder) context.Context {
	ctx = l.ScopeAllowance(ctx, key, label, a)
	if t, ok := ctx.Value(taskCtx{}).(*current); ok {
		t.holder = h
	}
	return ctx
}

// HoldFor asks the holder of the task ctx carries (ScopeHeld), if any, to
// hold worst for a call to model, after this ledger's own check (Begin).
// Without one, or for a call whose worst case is nothing (a free model),
// it holds nothing and settle does nothing. A refusal of the
// coordinator's is kept as the task's (TrippedFor, Tripped), as this
// ledger's own are.
func (l *Ledger) HoldFor(ctx context.Context, model string, worst float64) (settle func(usd float64, known, charged bool), err error) {
	t, _ := ctx.Value(taskCtx{}).(*current)
	if t == nil || t.holder == nil || !(worst > 0) {
		// A call that can cost nothing holds nothing: the coordinator
		// takes no hold of $0.
		return func(float64, bool, bool) {}, nil
	}
	settle, err = t.holder(ctx, model, worst)
	if err == nil {
		return settle, nil
	}
	if e, ok := As(err); ok {
		l.mu.Lock()
		if l.tripped == nil {
			l.tripped = e
		}
		if l.trippedBy == nil {
			l.trippedBy = map[string]*Error{}
		}
		if l.trippedBy[t.key] == nil {
			l.trippedBy[t.key] = e
		}
		l.mu.Unlock()
		return nil, err
	}
	return nil, fmt.Errorf("budget: the model call was not made: %w", err)
}
