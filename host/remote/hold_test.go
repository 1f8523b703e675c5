package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
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

// TestHostileWorkerHolds: a worker awarded a task under a run budget of $1
// asks holds over the bus as a hostile peer would. A hold asked for an
// award it does not hold, with a forged token, or on another worker's
// subject is refused; a hold that could cross the budget beside the one
// it holds is refused; a settle of more than its hold is charged the hold;
// and a hold never settled is charged what it held when its lease is
// lost (the worker may only be cut off from NATS): the ledger never
// passes $1.
func TestHostileWorkerHolds(t *testing.T) {
	rig := newHoldRig(t, time.Second)
	ns, base, ctx, ledger, pool, p := rig.ns, rig.base, rig.ctx, rig.ledger, rig.pool, rig.plan
	task, _ := p.ByOrdinal(2)
	scope := ledger.Scope(ctx, task.Key(), task.Label(), 0)

	rb := newBus(t, ns.URL())
	nc := rb.JetStream().Conn()
	// ask sends a raw hold request on subject.
	ask := func(subject string, req workers.HoldRequest) workers.HoldReply {
		t.Helper()
		data, _ := json.Marshal(req)
		m, err := nc.Request(subject, data, 5*time.Second)
		if err != nil {
			t.Fatalf("hold request on %s: %v", subject, err)
		}
		var r workers.HoldReply
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	held := make(chan struct{})
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			h := workers.HoldsFor(ctx)
			if h == nil {
				fail("an offer with a budget gave its Exec no hold client")
				return "", fmt.Errorf("no holds")
			}
			own := workers.HoldSubject(a.Coordinator, "far")
			req := workers.HoldRequest{Op: workers.HoldOpHold, Key: a.Key(), Award: a.Award, Worker: "far", Token: a.Token, Model: "m", Need: 0.5}
			for what, bad := range map[string]func(workers.HoldRequest) (string, workers.HoldRequest){
				"another award":  func(q workers.HoldRequest) (string, workers.HoldRequest) { q.Award = "0123456789abcdef"; return own, q },
				"a forged token": func(q workers.HoldRequest) (string, workers.HoldRequest) { q.Token = "forged"; return own, q },
				"another task":   func(q workers.HoldRequest) (string, workers.HoldRequest) { q.Key = "p.1"; return own, q },
				"another's name": func(q workers.HoldRequest) (string, workers.HoldRequest) { q.Worker = "near"; return own, q },
				"another subject": func(q workers.HoldRequest) (string, workers.HoldRequest) {
					return workers.HoldSubject(a.Coordinator, "near"), q
				},
				"a negative hold":   func(q workers.HoldRequest) (string, workers.HoldRequest) { q.Need = -3; return own, q },
				"a hold of nothing": func(q workers.HoldRequest) (string, workers.HoldRequest) { q.Need = 0; return own, q },
				"an unknown settle": func(q workers.HoldRequest) (string, workers.HoldRequest) {
					q.Op, q.Hold, q.USD = workers.HoldOpSettle, "77", 0.1
					return own, q
				},
			} {
				subject, q := bad(req)
				if r := ask(subject, q); r.Granted || r.Error == "" {
					fail("a hold with %s was answered %+v, want refused", what, r)
				}
			}
			if sp := ledger.Spent(); sp.Run != 0 {
				fail("refused holds charged $%v", sp.Run)
			}
			id, refusal, err := h.Hold(ctx, "m", 0.6)
			if err != nil || refusal != nil {
				fail("a hold of $0.60 under $1: %v %+v", err, refusal)
				return "", fmt.Errorf("no hold")
			}
			// Beside the $0.60 held, $0.60 more could cross the budget.
			if _, refusal, err := h.Hold(ctx, "m", 0.6); err != nil || refusal == nil || refusal.Scope != "run" {
				fail("a second hold of $0.60 = %+v, %v; want the run's budget refusing it", refusal, err)
			}
			if err := h.Settle(ctx, id, 5, false); err != nil {
				fail("settle: %v", err)
			}
			if sp := ledger.Spent(); math.Abs(sp.Run-0.6) > 1e-9 {
				fail("a settle of $5 for a hold of $0.60 charged $%v, want the hold", sp.Run)
			}
			if r := ask(own, workers.HoldRequest{Op: workers.HoldOpSettle, Key: a.Key(), Award: a.Award, Worker: "far", Token: a.Token, Hold: id, USD: 0.6}); r.Error == "" {
				fail("a hold settled twice was answered %+v", r)
			}
			// A hold never settled: the worker dies holding it.
			if _, refusal, err := h.Hold(ctx, "m", 0.3); err != nil || refusal != nil {
				fail("a hold of $0.30 beside $0.60 spent: %v %+v", err, refusal)
			}
			close(held)
			<-ctx.Done()
			return "", ctx.Err()
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att1"}
	rctx, stop := context.WithCancel(scope)
	done := make(chan error, 1)
	go func() {
		_, err := pool.Workers()[0].Run(rctx, a, io.Discard)
		done <- err
	}()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the worker never held its calls")
	}
	left := func() float64 { a, _ := ledger.AllowanceFor(scope); return a.USD }
	if l := left(); math.Abs(l-0.1) > 1e-9 {
		t.Errorf("with $0.60 spent and $0.30 held, $%v is left, want $0.10", l)
	}
	// The worker dies: its lease lapses, and its hold is charged what it
	// held, for a worker merely cut off from NATS may still be making the
	// call.
	_ = far.Close()
	for ledger.Spent().Run < 0.9-1e-9 {
		select {
		case <-ctx.Done():
			t.Fatalf("the hold of a worker whose lease was lost was never charged: $%v spent", ledger.Spent().Run)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if l := left(); math.Abs(l-0.1) > 1e-9 {
		t.Errorf("with $0.90 spent and nothing held, $%v is left, want $0.10", l)
	}
	stop()
	<-done
	for _, pr := range problems {
		t.Error(pr)
	}
	if sp := ledger.Spent(); sp.Run > 1+1e-9 || math.Abs(sp.Run-0.9) > 1e-9 {
		t.Errorf("the run spent $%v, want the $0.60 settled and the $0.30 held when the lease was lost, never past $1", sp.Run)
	}
}

// TestStoppedAwardChargesItsHolds: when the run stops a remote task itself
// (it pauses, or Ctrl-C) while its worker holds a call, the worker hears
// of it only at its next heartbeat and the call goes on: the hold is
// charged what it held, within the budget, and a late settle is not
// charged again.
func TestStoppedAwardChargesItsHolds(t *testing.T) {
	rig := newHoldRig(t, 0)
	ns, base, ctx, ledger, pool, p := rig.ns, rig.base, rig.ctx, rig.ledger, rig.pool, rig.plan
	task, _ := p.ByOrdinal(2)
	scope := ledger.Scope(ctx, task.Key(), task.Label(), 0)
	rb := newBus(t, ns.URL())
	held, stopped := make(chan string), make(chan struct{})
	var late error
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			h := workers.HoldsFor(ctx)
			if h == nil {
				return "", fmt.Errorf("no holds")
			}
			id, refusal, err := h.Hold(ctx, "m", 0.3)
			if err != nil || refusal != nil {
				return "", fmt.Errorf("hold: %v %+v", err, refusal)
			}
			held <- id
			<-stopped
			late = h.Settle(ctx, id, 0.1, false)
			close(held)
			return "", fmt.Errorf("stopped")
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att1"}
	rctx, stop := context.WithCancel(scope)
	done := make(chan error, 1)
	go func() {
		_, err := pool.Workers()[0].Run(rctx, a, io.Discard)
		done <- err
	}()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the worker never held its call")
	}
	stop()
	<-done
	close(stopped)
	<-held
	if late == nil {
		t.Error("a settle after the run stopped the award was taken")
	}
	if sp := ledger.Spent(); math.Abs(sp.Run-0.3) > 1e-9 {
		t.Errorf("the run spent $%v, want the $0.30 the stopped call held", sp.Run)
	}
	if left, _ := ledger.AllowanceFor(scope); math.Abs(left.USD-0.7) > 1e-9 {
		t.Errorf("$%v left, want $0.70: nothing held any more", left.USD)
	}
}

// TestSucceededTaskLandsThoughAHoldWasRefused: a remote task's second hold
// is refused while its first holds $0.60 of a $1 run budget; its agent goes
// on and the task succeeds, its figures saying the refused call (Stop).
// The task lands with its commit: a refusal pauses only a task that
// failed.
func TestSucceededTaskLandsThoughAHoldWasRefused(t *testing.T) {
	rig := newHoldRig(t, 0)
	ns, base, ctx, ledger, pool, p := rig.ns, rig.base, rig.ctx, rig.ledger, rig.pool, rig.plan
	task, _ := p.ByOrdinal(2)
	rb := newBus(t, ns.URL())
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			h := workers.HoldsFor(ctx)
			id, _, err := h.Hold(ctx, "m", 0.6)
			if err != nil {
				return "", err
			}
			if _, refusal, err := h.Hold(ctx, "m", 0.6); refusal == nil || err != nil {
				return "", fmt.Errorf("a second $0.60 hold beside the first was not refused: %v", err)
			}
			if err := h.Settle(ctx, id, 0.1, false); err != nil {
				return "", err
			}
			workers.ReportSpend(ctx, workers.Spend{USD: 0.1, Calls: 1, Stop: &workers.BudgetStop{Model: "m", Need: 0.6}})
			return commitIn(ctx, r, "far-"+a.Award, a.Run, a.Task, a.Base, a.AttemptID)
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att1"}
	out, err := pool.Workers()[0].Run(ledger.Scope(ctx, task.Key(), task.Label(), 0), a, io.Discard)
	if err != nil {
		t.Fatalf("a task that succeeded on its worker came back as: %v", err)
	}
	if out.Commit == "" {
		t.Fatal("the task's commit was dropped")
	}
	if got := ledger.Spent().Run; math.Abs(got-0.1) > 1e-9 {
		t.Errorf("the run's ledger holds $%v spent, want the $0.10 settled", got)
	}
}

// TestHoldAskedAgainIsHeldOnce: a worker whose hold or settle went
// unanswered asks it again with the same request ID; the coordinator
// answers it as it did and holds, or charges, nothing more.
func TestHoldAskedAgainIsHeldOnce(t *testing.T) {
	rig := newHoldRig(t, 0)
	ns, base, ctx, ledger, pool, p := rig.ns, rig.base, rig.ctx, rig.ledger, rig.pool, rig.plan
	task, _ := p.ByOrdinal(2)
	scope := ledger.Scope(ctx, task.Key(), task.Label(), 0)
	rb := newBus(t, ns.URL())
	nc := rb.JetStream().Conn()
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			ask := func(req workers.HoldRequest) workers.HoldReply {
				req.Key, req.Award, req.Worker, req.Token = a.Key(), a.Award, "far", a.Token
				data, _ := json.Marshal(req)
				m, err := nc.Request(workers.HoldSubject(a.Coordinator, "far"), data, 5*time.Second)
				if err != nil {
					t.Errorf("hold request: %v", err)
					return workers.HoldReply{}
				}
				var rep workers.HoldReply
				_ = json.Unmarshal(m.Data, &rep)
				return rep
			}
			hold := workers.HoldRequest{Op: workers.HoldOpHold, ID: "1", Model: "m", Need: 0.6}
			one, again := ask(hold), ask(hold)
			if !one.Granted || again.Hold != one.Hold || !again.Granted {
				t.Errorf("a hold asked twice was answered %+v then %+v, want the same hold", one, again)
			}
			// Had it been held twice, $1.20 would be held under $1.
			if left, _ := ledger.AllowanceFor(scope); math.Abs(left.USD-0.4) > 1e-9 {
				t.Errorf("after one hold of $0.60 asked twice $%v is left, want $0.40", left.USD)
			}
			settle := workers.HoldRequest{Op: workers.HoldOpSettle, ID: "2", Hold: one.Hold, USD: 0.5}
			if r1, r2 := ask(settle), ask(settle); !r1.Granted || !r2.Granted {
				t.Errorf("a settle asked twice was answered %+v then %+v, want settled both times", r1, r2)
			}
			return commitIn(ctx, r, "far-"+a.Award, a.Run, a.Task, a.Base, a.AttemptID)
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att1"}
	if _, err := pool.Workers()[0].Run(scope, a, io.Discard); err != nil {
		t.Fatal(err)
	}
	if sp := ledger.Spent(); math.Abs(sp.Run-0.5) > 1e-9 || sp.Calls != 1 {
		t.Errorf("the run spent $%v in %d calls, want the one $0.50 call settled", sp.Run, sp.Calls)
	}
}

// TestCutOffWorkerHoldsAreCharged: a worker holds $0.60 of a $1 run budget
// for a call and is then cut off from NATS, not from its model. The
// coordinator loses its lease and charges the hold what it held, for the
// call may go on: another call of $0.90 is refused. The worker gives the
// task up once a lease passes without a heartbeat taken: it makes no
// more calls.
func TestCutOffWorkerHoldsAreCharged(t *testing.T) {
	rig := newHoldRig(t, time.Second)
	ns, base, ctx, ledger, pool, p := rig.ns, rig.base, rig.ctx, rig.ledger, rig.pool, rig.plan
	task, _ := p.ByOrdinal(2)
	other, _ := p.ByOrdinal(1)
	rb := newBus(t, ns.URL())
	held, gaveUp := make(chan struct{}), make(chan bool, 1)
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ectx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			h := workers.HoldsFor(ectx)
			if _, _, err := h.Hold(ectx, "m", 0.6); err != nil {
				return "", err
			}
			close(held)
			// The model call goes on while NATS is cut off, until the
			// worker gives the task up.
			select {
			case <-ectx.Done():
				gaveUp <- true
			case <-time.After(15 * time.Second): // a failure guard
				gaveUp <- false
			}
			return "", ectx.Err()
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att1"}
	rctx, stop := context.WithCancel(ledger.Scope(ctx, task.Key(), task.Label(), 0))
	defer stop()
	go func() { _, _ = pool.Workers()[0].Run(rctx, a, io.Discard) }()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the worker never held its call")
	}
	_ = rb.Close() // the worker is cut off from NATS
	if !<-gaveUp {
		t.Error("a worker cut off from NATS never gave its task up")
	}
	for ledger.Spent().Run < 0.6-1e-9 {
		select {
		case <-ctx.Done():
			t.Fatalf("the hold of a worker whose lease was lost was not charged: the run spent $%v", ledger.Spent().Run)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if end, err := ledger.Begin(ledger.Scope(ctx, other.Key(), other.Label(), 0), "m", 0.9, true); err == nil {
		end(0, true, false)
		t.Error("a call of $0.90 was granted beside the $0.60 the cut-off worker may spend, under $1")
	}
}

// heldCall makes a model call of worst dollars as the worker's model door
// does for a task handed out with allowance a: its own ledger's check
// against the allowance first (Begin), then the coordinator's hold
// (HoldFor). It returns the ledger's TrippedFor, which the task's figures
// carry as their Stop, and the refusal, if one came.
func heldCall(ctx context.Context, a workers.Assignment, worst, cost float64) (*budget.Error, error) {
	h := workers.HoldsFor(ctx)
	wl := budget.New(0)
	wctx := wl.ScopeHeld(ctx, a.Key(), "t", budget.Allowance{USD: a.Budget.USD, Scope: budget.Scope(a.Budget.Scope), Limit: a.Budget.Limit, Spent: a.Budget.Spent},
		func(cctx context.Context, model string, worst float64) (func(float64, bool, bool), error) {
			id, r, err := h.Hold(cctx, model, worst)
			if err != nil {
				return nil, err
			}
			if r != nil {
				return nil, &budget.Error{Scope: budget.Scope(r.Scope), Limit: r.Limit, Spent: r.Spent, Held: r.Held, Need: r.Need, Model: r.Model, Run: r.Run, Plan: r.Plan}
			}
			return func(usd float64, _, _ bool) { _ = h.Settle(cctx, id, usd, false) }, nil
		})
	end, err := wl.Begin(wctx, "m", worst, true)
	if err != nil {
		return wl.TrippedFor(a.Key()), err
	}
	settle, err := wl.HoldFor(wctx, "m", worst)
	if err != nil {
		end(0, true, false)
		return wl.TrippedFor(a.Key()), err
	}
	settle(cost, true, true)
	end(cost, true, true)
	return nil, nil
}

// TestHeldTaskAllowanceLeavesOthersHoldsToTheLedger: task 2 is offered
// while another task's call holds $0.60 of a $1 run budget; that call then
// ends for $0.05. Task 2's call of worst case $0.50 fits what is left, so
// the coordinator's ledger holds it, and the worker's own check against
// the offer's allowance must let it through too: the allowance of a task
// whose calls are held is reckoned from what was spent, not less the
// holds of calls that may end cheaply. The task lands.
func TestHeldTaskAllowanceLeavesOthersHoldsToTheLedger(t *testing.T) {
	rig := newHoldRig(t, 0)
	ns, base, ctx, ledger, pool, p := rig.ns, rig.base, rig.ctx, rig.ledger, rig.pool, rig.plan
	task, _ := p.ByOrdinal(2)
	other, _ := p.ByOrdinal(1)
	end, err := ledger.Begin(ledger.Scope(ctx, other.Key(), other.Label(), 0), "m", 0.6, true)
	if err != nil {
		t.Fatal(err)
	}
	rb := newBus(t, ns.URL())
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			end(0.05, true, true) // the other call ends cheaply
			if _, err := heldCall(ctx, a, 0.5, 0.2); err != nil {
				return "", fmt.Errorf("a $0.50 call with $0.95 left was refused (allowance offered $%v): %w", a.Budget.USD, err)
			}
			return commitIn(ctx, r, "far-"+a.Award, a.Run, a.Task, a.Base, a.AttemptID)
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att1"}
	if _, err := pool.Workers()[0].Run(ledger.Scope(ctx, task.Key(), task.Label(), 0), a, io.Discard); err != nil {
		t.Fatal(err)
	}
	if sp := ledger.Spent(); math.Abs(sp.Run-0.25) > 1e-9 {
		t.Errorf("the run spent $%v, want $0.05 and $0.20", sp.Run)
	}
}

// TestWorkerAllowanceRefusalPausesTheRun: with $0.70 of a $1 run budget
// spent when task 2 is offered, its worker's own check refuses a call of
// $0.50 against the allowance: the run pauses on that budget, as on a
// local refusal, with the budget's true figures; it is not a failure.
func TestWorkerAllowanceRefusalPausesTheRun(t *testing.T) {
	rig := newHoldRig(t, 0)
	ns, base, ctx, ledger, pool, p := rig.ns, rig.base, rig.ctx, rig.ledger, rig.pool, rig.plan
	task, _ := p.ByOrdinal(2)
	other, _ := p.ByOrdinal(1)
	ledger.ChargeFor(ledger.Scope(ctx, other.Key(), other.Label(), 0), 0.7, true)
	rb := newBus(t, ns.URL())
	var local *budget.Error
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			stop, err := heldCall(ctx, a, 0.5, 0)
			if err == nil || stop == nil {
				return "", fmt.Errorf("a $0.50 call with $0.30 left was not refused: %v", err)
			}
			local = stop
			workers.ReportSpend(ctx, workers.Spend{Stop: &workers.BudgetStop{Model: stop.Model, Need: stop.Need}})
			return "", err
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att1"}
	_, err = pool.Workers()[0].Run(ledger.Scope(ctx, task.Key(), task.Label(), 0), a, io.Discard)
	e, ok := budget.As(err)
	if !ok {
		t.Fatalf("the worker's refusal came back as %v, want the run's budget pausing it", err)
	}
	if e.Scope != budget.ScopeRun || math.Abs(e.Spent-0.7) > 1e-9 || e.Held != 0 || e.Need != 0.5 {
		t.Errorf("the pause says %+v, want the run's $0.70 spent, nothing held, $0.50 needed", e)
	}
	if local == nil || math.Abs(local.Spent-0.7) > 1e-9 || local.Scope != budget.ScopeRun {
		t.Errorf("the worker's own refusal said %+v, want the run's $0.70 spent", local)
	}
}

// TestHoldsOfOneAwardAreBounded: a worker asking hold after hold of a cent
// without settling any is refused past the most one award may hold at once
// (16), whatever room the budget leaves; a call that failed and is
// released costs nothing, is not counted, and frees its room.
func TestHoldsOfOneAwardAreBounded(t *testing.T) {
	rig := newHoldRig(t, 0)
	ns, base, ctx, ledger, pool, p := rig.ns, rig.base, rig.ctx, rig.ledger, rig.pool, rig.plan
	task, _ := p.ByOrdinal(2)
	scope := ledger.Scope(ctx, task.Key(), task.Label(), 0)
	rb := newBus(t, ns.URL())
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			h := workers.HoldsFor(ctx)
			var ids []string
			for range 16 {
				id, refusal, err := h.Hold(ctx, "m", 0.01)
				if err != nil || refusal != nil {
					return "", fmt.Errorf("hold %d of $0.01: %v %+v", len(ids)+1, err, refusal)
				}
				ids = append(ids, id)
			}
			if _, refusal, err := h.Hold(ctx, "m", 0.01); err == nil || refusal != nil {
				t.Errorf("a 17th hold open at once was answered %+v, %v; want refused", refusal, err)
			}
			// The call failed: the model door ends it uncharged.
			if err := h.End(ctx, ids[0], 0, true, false); err != nil {
				return "", err
			}
			if sp := ledger.Spent(); sp.Calls != 0 || sp.Run != 0 {
				t.Errorf("a released hold was charged: %+v", sp)
			}
			id, _, err := h.Hold(ctx, "m", 0.01)
			if err != nil {
				t.Errorf("a hold once one was released: %v", err)
			}
			for _, id := range append(ids[1:], id) {
				if err := h.Release(ctx, id); err != nil {
					return "", err
				}
			}
			return commitIn(ctx, r, "far-"+a.Award, a.Run, a.Task, a.Base, a.AttemptID)
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att1"}
	if _, err := pool.Workers()[0].Run(scope, a, io.Discard); err != nil {
		t.Fatal(err)
	}
	if sp := ledger.Spent(); sp.Calls != 0 || sp.Run != 0 {
		t.Errorf("calls that failed were charged: %+v", sp)
	}
	if left, _ := ledger.AllowanceFor(scope); math.Abs(left.USD-1) > 1e-9 {
		t.Errorf("$%v left, want the whole $1: nothing held", left.USD)
	}
}

// holdRig is what the hold tests start from: a coordinator's pool over an
// embedded nats-server, on a repository with one commit (base), charging
// a ledger of a $1 run budget, and the plan planSrc as "p".
type holdRig struct {
	ns     *bustest.NATS
	repo   *gitwork.Repo
	base   string
	ctx    context.Context
	ledger *budget.Ledger
	pool   *remote.Pool
	plan   *plans.Plan
}

// newHoldRig starts a holdRig whose leases last lease (0: the default).
func newHoldRig(t *testing.T, lease time.Duration) *holdRig {
	t.Helper()
	h := &holdRig{ns: bustest.StartNATS(t), repo: newRepo(t, true), ledger: budget.New(1)}
	h.base, _, _ = h.repo.Head(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	h.ctx = ctx
	pool, err := remote.NewPool(ctx, newBus(t, h.ns.URL()), h.repo, "coordinator-p", []run.Worker{&localWorker{repo: h.repo}},
		remote.Options{Window: 100 * time.Millisecond, Budget: h.ledger, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	h.pool = pool
	h.plan = plans.Parse([]byte(planSrc))
	h.plan.Name = "p"
	return h
}
