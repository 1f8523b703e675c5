package run

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/plans"
)

// The run's side of the budgets (package budget): the ledger starts from
// what state.json says the plan's earlier runs spent, each task is entered
// with its budget, a task that ends because the model door refused a call
// over a budget pauses the plan (never a failure, never retried), and the
// figures go to state.json with every save.

// budgetStart restores the ledger from the state and sets the run's and
// the plan's budgets, with the raises on record; from then on each charge
// is written to state.json at once, until the returned end is called.
func (r *runner) budgetStart(p *plans.Plan) (end func()) {
	l := r.o.Budget
	if l == nil {
		return func() {}
	}
	sp := r.st.Spending
	var s budget.Spent
	if sp != nil {
		s = budget.Spent{Run: sp.RunUSD, Plan: sp.PlanUSD, Tasks: maps.Clone(sp.TasksUSD), Unknown: sp.UnpricedCalls}
	}
	l.Restore(s)
	// The budgets the config (or --budget) gives, else those the run
	// started with: a resumed run keeps its budgets.
	sp = r.st.Spent()
	b := r.o.Config.Budget
	if b.Run > 0 {
		sp.RunBudgetUSD = b.Run
	}
	if b.Plan > 0 {
		sp.PlanBudgetUSD = b.Plan
	}
	l.SetLimits(sp.RunLimit(), sp.PlanLimit())
	sp.PausedBy, sp.PausedTask = "", ""
	r.budgetTags(p)
	r.money = &runMoney{plan: r.st.ActivePlan, saved: cloneSpending(sp)}
	l.OnCharge(r.persistSpending)
	return func() { l.OnCharge(nil) }
}

// runMoney is what keeps the figures on disk between the run's saves.
type runMoney struct {
	mu sync.Mutex
	// plan is the active plan's path; saved the spending record as the
	// run last saved it.
	plan  string
	saved *plans.Spending
}

// persistSpending writes the ledger's figures into state.json after a
// charge, so that a run killed in the middle of a task does not lose what
// it spent: the file as the run last saved it, its spending record as the
// run holds it (never one read back from the file) with the new figures.
// It runs in the model call's goroutine and touches nothing of the
// runner's state but runMoney.
func (r *runner) persistSpending() {
	m := r.money
	m.mu.Lock()
	defer m.mu.Unlock()
	st, _, err := r.store.Read()
	if err != nil || st == nil || st.ActivePlan != m.plan {
		return
	}
	sp := cloneSpending(m.saved)
	setFigures(sp, r.o.Budget.Spent())
	st.Spending = sp
	if err := r.store.Save(st); err != nil {
		r.o.Logger.Warn("write what the run spent to state.json", "err", err)
	}
}

// holdSpending syncs the figures into the state for a save and holds off
// persistSpending until the returned release.
func (r *runner) holdSpending() (release func()) {
	r.syncSpending()
	m := r.money
	if m == nil {
		return func() {}
	}
	m.mu.Lock()
	m.saved = cloneSpending(r.st.Spending)
	return m.mu.Unlock
}

func cloneSpending(sp *plans.Spending) *plans.Spending {
	if sp == nil {
		return &plans.Spending{}
	}
	c := *sp
	c.TasksUSD = maps.Clone(sp.TasksUSD)
	c.TaskBudgets = maps.Clone(sp.TaskBudgets)
	c.Raises = slices.Clone(sp.Raises)
	return &c
}

func setFigures(sp *plans.Spending, s budget.Spent) {
	sp.RunUSD, sp.PlanUSD, sp.UnpricedCalls = s.Run, s.Plan, s.Unknown
	sp.TasksUSD = s.Tasks
}

// budgetTask enters task t in the ledger with its budget: its [budget: $N]
// tag, else budget.task, plus the raises on record. A tag is held to what
// the run first read (budgetTags): an edit of the plan file during a run
// may lower a task's budget, never raise or remove it.
func (r *runner) budgetTask(t plans.Task) {
	if l := r.o.Budget; l != nil {
		l.Enter(t.Key(), t.Label(), r.taskLimit(t))
	}
}

// budgetScope is ctx carrying task t with its budget (as budgetTask
// reckons it), for a worker: tasks carried out at once are each checked
// and charged apart.
func (r *runner) budgetScope(ctx context.Context, t plans.Task) context.Context {
	if l := r.o.Budget; l != nil {
		return l.Scope(ctx, t.Key(), t.Label(), r.taskLimit(t))
	}
	return ctx
}

// taskLimit is task t's budget in dollars (0: none).
func (r *runner) taskLimit(t plans.Task) float64 {
	key := t.Key()
	limit := r.o.Config.Budget.Task
	if v, ok := r.tagBudget(t); ok {
		limit = v
	}
	sp := r.st.Spent()
	if first, ok := sp.TaskBudgets[key]; ok && (limit <= 0 || limit > first) {
		limit = first
	}
	if limit > 0 {
		limit += sp.Raised(string(budget.ScopeTask), key)
	}
	return limit
}

// budgetTags records the [budget: $N] tags of plan p's open tasks that the
// state has none for yet, as the run first reads them.
func (r *runner) budgetTags(p *plans.Plan) {
	if r.o.Budget == nil {
		return
	}
	for _, t := range p.Tasks {
		v, ok := r.tagBudget(t)
		if !ok || t.Done {
			continue
		}
		sp := r.st.Spent()
		if _, seen := sp.TaskBudgets[t.Key()]; seen {
			continue
		}
		if sp.TaskBudgets == nil {
			sp.TaskBudgets = map[string]float64{}
		}
		sp.TaskBudgets[t.Key()] = v
	}
}

// tagBudget is task t's [budget: $N] tag, when it has a valid one; an
// invalid one is a warning.
func (r *runner) tagBudget(t plans.Task) (float64, bool) {
	if t.Budget == "" {
		return 0, false
	}
	v, err := budget.ParseAmount(t.Budget)
	if err != nil {
		r.warn(fmt.Sprintf("task %s: %v; it has budget.task's budget instead", t.Label(), err))
		return 0, false
	}
	return v, true
}

// overBudget is the budget's refusal that ended a task with err, or nil
// when err is not one: the refusal itself, when the task ran in this
// process, else the one the ledger kept (an agent's plugin passes on the
// model door's error as text only).
func (r *runner) overBudget(err error) *budget.Error {
	if err == nil || r.o.Budget == nil {
		return nil
	}
	if e, ok := budget.As(err); ok {
		return e
	}
	return r.o.Budget.Tripped()
}

// overBudgetFor is overBudget for task key carried out by a worker: the
// refusal kept for that task alone (budgetScope), never another's.
func (r *runner) overBudgetFor(key string, err error) *budget.Error {
	if err == nil || r.o.Budget == nil {
		return nil
	}
	if e, ok := budget.As(err); ok {
		return e
	}
	return r.o.Budget.TrippedFor(key)
}

// budgetPause pauses the plan on a budget: the task is withdrawn (it runs
// again on resume), the reason says what was spent on what and how to go
// on, and state.json records which budget paused it.
func (r *runner) budgetPause(p *plans.Plan, t plans.Task, e *budget.Error) error {
	r.st.Withdraw(t)
	return r.budgetPaused(p, e)
}

// budgetPaused pauses the plan on budget refusal e, which state.json
// records with the spending.
func (r *runner) budgetPaused(p *plans.Plan, e *budget.Error) error {
	sp := r.st.Spent()
	sp.PausedBy, sp.PausedTask = string(e.Scope), ""
	if e.Scope == budget.ScopeTask {
		sp.PausedTask = e.TaskKey
	}
	return r.pauseErr(p, e.Error()+"; "+e.Hint())
}

// syncSpending copies the ledger's figures into the state before a save.
func (r *runner) syncSpending() {
	if r.o.Budget == nil || r.st == nil {
		return
	}
	setFigures(r.st.Spent(), r.o.Budget.Spent())
}

// taskCost is what task t cost, for task.done; nil when unknown.
func (r *runner) taskCost(t plans.Task) *float64 {
	if r.o.Budget == nil {
		return nil
	}
	usd, known := r.o.Budget.TaskSpent(t.Key())
	if !known {
		return nil
	}
	return &usd
}
