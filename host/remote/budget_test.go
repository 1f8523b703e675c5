package remote_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/remote"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// TestPoolChargesWhatWorkersSpendCapped: each task offered carries what
// its budget leaves it, and what the worker says the task spent is charged
// to the run's ledger as the task's. A hostile worker that says it spent
// less than nothing is charged nothing, one that says it spent an absurd
// amount is charged the allowance and no more, and without a budget an
// absurd amount is no figure at all: it counts as a call of unknown price.
func TestPoolChargesWhatWorkersSpendCapped(t *testing.T) {
	ns := bustest.StartNATS(t)
	repo := newRepo(t, true)
	base, _, _ := repo.Head(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ledger := budget.New(0)
	pool, err := remote.NewPool(ctx, newBus(t, ns.URL()), repo, "coordinator-p", []run.Worker{&localWorker{repo: repo}},
		remote.Options{Window: 100 * time.Millisecond, Budget: ledger})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var mu sync.Mutex
	var claim workers.Spend
	var got []*workers.Allowance
	rb := newBus(t, ns.URL())
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			mu.Lock()
			got = append(got, a.Budget)
			workers.ReportSpend(ctx, claim)
			mu.Unlock()
			return commitIn(ctx, r, "far-"+a.Award, a.Run, a.Task, a.Base, a.AttemptID)
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()

	p := plans.Parse([]byte(planSrc))
	p.Name = "p"
	task, _ := p.ByOrdinal(2)
	slot := pool.Workers()[0]
	offer := func(n int, limit float64, say workers.Spend) {
		t.Helper()
		mu.Lock()
		claim = say
		mu.Unlock()
		a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: n, AttemptID: fmt.Sprintf("att%d", n)}
		if _, err := slot.Run(ledger.Scope(ctx, task.Key(), task.Label(), limit), a, io.Discard); err != nil {
			t.Fatalf("offer %d: %v", n, err)
		}
	}
	spent := func() float64 { usd, _ := ledger.TaskSpent(task.Key()); return usd }

	offer(1, 1, workers.Spend{USD: 0.25, Calls: 2})
	if s := spent(); math.Abs(s-0.25) > 1e-9 {
		t.Fatalf("after an honest $0.25 the task has %v", s)
	}
	offer(2, 1, workers.Spend{USD: -5})
	if s := spent(); math.Abs(s-0.25) > 1e-9 {
		t.Errorf("a worker saying it spent -$5 changed the task's figure to %v, want it kept at 0.25", s)
	}
	offer(3, 1, workers.Spend{USD: 1e300, Unknown: -7})
	if s := spent(); math.Abs(s-1) > 1e-9 {
		t.Errorf("a worker saying it spent $1e300 was charged up to %v, want the allowance (the budget, $1, in all)", s)
	}
	if sp := ledger.Spent(); sp.Unknown != 0 || math.Abs(sp.Run-1) > 1e-9 {
		t.Errorf("ledger %+v, want $1 for the run and no call of unknown price", sp)
	}
	mu.Lock()
	if len(got) != 3 || got[0] == nil || got[0].USD != 1 || got[0].Scope != "task" || got[1].USD != 0.75 || got[2].USD != 0.75 {
		t.Errorf("allowances offered %s, want $1 then $0.75 twice, each the task's", show(got))
	}
	mu.Unlock()

	// Without a budget an offer carries none, and an absurd figure is
	// no figure.
	free := budget.New(0)
	pool2, err := remote.NewPool(ctx, newBus(t, ns.URL()), repo, "coordinator-q", []run.Worker{&localWorker{repo: repo}},
		remote.Options{Window: 100 * time.Millisecond, Budget: free})
	if err != nil {
		t.Fatal(err)
	}
	defer pool2.Close()
	mu.Lock()
	claim, got = workers.Spend{USD: 5e12}, nil
	mu.Unlock()
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 9, AttemptID: "att9"}
	if _, err := pool2.Workers()[0].Run(free.Scope(ctx, task.Key(), task.Label(), 0), a, io.Discard); err != nil {
		t.Fatal(err)
	}
	if sp := free.Spent(); sp.Run != 0 || sp.Unknown != 1 {
		t.Errorf("without a budget a $5e12 claim made the figures %+v, want none and one call of unknown price", sp)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != nil {
		t.Errorf("without a budget the offer carried %s, want no allowance", show(got))
	}
	mu.Unlock()
}

func show(as []*workers.Allowance) string {
	var parts []string
	for _, a := range as {
		if a == nil {
			parts = append(parts, "none")
			continue
		}
		parts = append(parts, fmt.Sprintf("%+v", *a))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
