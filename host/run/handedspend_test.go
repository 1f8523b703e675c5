package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/plugins"
)

// refusedThenDone is an agent one of whose calls its budget refuses
// (CheckFor with the task's context), which goes on without it and does
// the task.
type refusedThenDone struct {
	ledger *budget.Ledger
	dir    string
}

func (refusedThenDone) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "thrifty", Kind: plugins.KindAgent}, nil
}

func (a refusedThenDone) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	if err := a.ledger.CheckFor(ctx, "m", 10, true); err == nil {
		return plugins.AgentResponse{Error: "a $10 call under a $1 allowance was not refused"}, nil
	}
	if err := os.WriteFile(filepath.Join(a.dir, "one.txt"), []byte("one\n"), 0o644); err != nil {
		return plugins.AgentResponse{}, err
	}
	req.Plan = "p"
	return tick(ctx, h, req)
}

// TestHandedTaskThatSucceededSaysNoStop: a handed task one of whose calls
// its allowance refused, which went on and succeeded, says what it spent
// and no stop: the coordinator pauses only a task that failed on one.
func TestHandedTaskThatSucceededSaysNoStop(t *testing.T) {
	agent := &refusedThenDone{}
	h, repo, base := handedWorld(t, agent)
	h.Budget = budget.New(0)
	agent.ledger = h.Budget
	ht := handedTask(t, repo, base, plan(task(1, "Model work", "", "test -f one.txt")), 1, 1)
	agent.dir = ht.Dir
	ht.Allowance = &budget.Allowance{USD: 1, Scope: budget.ScopeRun, Limit: 1}
	var spent *HandedSpend
	ht.Spent = func(s HandedSpend) { spent = &s }
	if _, err := h.Run(context.Background(), ht); err != nil {
		t.Fatalf("the task failed: %v", err)
	}
	if spent == nil {
		t.Fatal("the task's figures were not said")
	}
	if spent.Stop != nil {
		t.Errorf("a task that succeeded says its budget stopped it: %v", spent.Stop)
	}
}
