package budget

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/weavehq/weave/internal/price"
)

// Scope names what a budget bounds.
type Scope string

// The scopes of a budget.
const (
	ScopeRun  Scope = "run"
	ScopePlan Scope = "plan"
	ScopeTask Scope = "task"
)

// Error is a model call refused because it could cross a budget, or
// because its model has no price while a budget holds.
type Error struct {
	// Scope is the budget the call could cross; TaskKey and Task name the
	// task for ScopeTask.
	Scope   Scope
	TaskKey string
	Task    string
	// Limit is the budget, Spent what it holds so far, Need the call's
	// worst case; all in US dollars.
	Limit, Spent, Need float64
	// Model is the model of the call; NoPrice says its price is unknown.
	Model   string
	NoPrice bool
	// Run and Plan are what the run and the plan spent so far (what was
	// spent on what).
	Run, Plan float64
}

func (e *Error) Error() string {
	if e.NoPrice {
		return fmt.Sprintf("budget: model %q has no known price, so its calls cannot be kept within the %s budget; add its price under prices: in .weave/config.yaml (input and output, US dollars per million tokens)", e.Model, e.Scope)
	}
	what := "the run's"
	switch e.Scope {
	case ScopePlan:
		what = "the plan's"
	case ScopeTask:
		what = "task " + e.Task + "'s"
	}
	return fmt.Sprintf("budget: the next model call could cross %s budget of %s: %s of it is spent, and the call could cost up to %s (%s)",
		what, money(e.Limit), money(e.Spent), money(e.Need), e.Spending())
}

// Spending says what was spent on what: the run, the plan and the task.
func (e *Error) Spending() string {
	parts := []string{"run " + money(e.Run), "plan " + money(e.Plan)}
	if e.Scope == ScopeTask {
		parts = append(parts, "task "+e.TaskKey+" "+money(e.Spent))
	}
	return "spent: " + strings.Join(parts, ", ")
}

// Hint says how to go on.
func (e *Error) Hint() string {
	if e.NoPrice {
		return fmt.Sprintf("add prices.%s.input and .output to .weave/config.yaml, then run `weave start-work` again", e.Model)
	}
	flag := "--run"
	switch e.Scope {
	case ScopePlan:
		flag = "--plan"
	case ScopeTask:
		flag = "--task " + e.TaskKey
	}
	return fmt.Sprintf("raise it with `weave budget raise %s AMOUNT` then run `weave start-work`, or run `weave start-work --budget AMOUNT` with a higher run budget", flag)
}

func money(usd float64) string { return price.Format(usd, true) }

// As finds a budget's *Error in err.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Spent is what a ledger holds: the run's and the plan's spend, each task's
// by key, and the calls whose price was unknown (not in the figures).
type Spent struct {
	Run     float64
	Plan    float64
	Tasks   map[string]float64
	Unknown int
	// TasksUnknown counts each task's calls of unknown price, in this
	// process.
	TasksUnknown map[string]int
}

// Ledger keeps a run's spending against its budgets.
type Ledger struct {
	mu sync.Mutex
	// run and plan are the limits; 0 is none.
	run, plan float64
	spent     Spent
	inPlan    bool
	task      *current
	tripped   *Error
	// charged, when set, is called after each charge, without the lock.
	charged func()
}

// current is the task the run is on.
type current struct {
	key, label string
	limit      float64
}

// New is a ledger with a run budget of run dollars (0: none).
func New(run float64) *Ledger {
	return &Ledger{run: run, spent: Spent{Tasks: map[string]float64{}}}
}

// SetLimits sets the run's and the plan's budgets (0: none).
func (l *Ledger) SetLimits(run, plan float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.run, l.plan = run, plan
}

// Restore starts the ledger from what a plan's earlier runs spent, and
// marks the calls from now on as the plan's.
func (l *Ledger) Restore(s Spent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spent = Spent{Run: s.Run, Plan: s.Plan, Tasks: maps.Clone(s.Tasks), Unknown: s.Unknown}
	if l.spent.Tasks == nil {
		l.spent.Tasks = map[string]float64{}
	}
	l.inPlan = true
}

// Enter makes key (labelled label in messages) the task the calls are for,
// with a budget of limit dollars (0: none); an empty key leaves the task.
// A refusal kept from before is forgotten.
func (l *Ledger) Enter(key, label string, limit float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tripped = nil
	if key == "" {
		l.task = nil
		return
	}
	l.task = &current{key: key, label: label, limit: limit}
}

// Active reports whether any budget holds for the next call.
func (l *Ledger) Active() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active()
}

func (l *Ledger) active() bool {
	return l.run > 0 || l.inPlan && l.plan > 0 || l.task != nil && l.task.limit > 0
}

// Check says whether a call to model whose worst case is worst dollars
// (known: false when it could not be priced) may be made: nil, or an
// *Error, which is also kept as Tripped.
func (l *Ledger) Check(model string, worst float64, known bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active() {
		return nil
	}
	e := l.refusal(model, worst, known)
	if e == nil {
		return nil
	}
	if l.tripped == nil {
		l.tripped = e
	}
	return e
}

func (l *Ledger) refusal(model string, worst float64, known bool) *Error {
	base := Error{Model: model, Need: worst, Run: l.spent.Run, Plan: l.spent.Plan}
	if l.task != nil {
		base.TaskKey, base.Task = l.task.key, l.task.label
	}
	if !known {
		e := base
		e.NoPrice, e.Scope = true, l.tightest()
		return &e
	}
	if t := l.task; t != nil && t.limit > 0 && l.spent.Tasks[t.key]+worst > t.limit {
		e := base
		e.Scope, e.Limit, e.Spent = ScopeTask, t.limit, l.spent.Tasks[t.key]
		return &e
	}
	if l.inPlan && l.plan > 0 && l.spent.Plan+worst > l.plan {
		e := base
		e.Scope, e.Limit, e.Spent = ScopePlan, l.plan, l.spent.Plan
		return &e
	}
	if l.run > 0 && l.spent.Run+worst > l.run {
		e := base
		e.Scope, e.Limit, e.Spent = ScopeRun, l.run, l.spent.Run
		return &e
	}
	return nil
}

// tightest is the scope of the most specific budget that holds.
func (l *Ledger) tightest() Scope {
	switch {
	case l.task != nil && l.task.limit > 0:
		return ScopeTask
	case l.inPlan && l.plan > 0:
		return ScopePlan
	}
	return ScopeRun
}

// OnCharge has f called after each charge (nil: nothing), so that the
// figures can be kept on disk as they grow.
func (l *Ledger) OnCharge(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.charged = f
}

// Charge records a call that cost usd (known: false when its price was
// unknown, which is counted apart, never as zero).
func (l *Ledger) Charge(usd float64, known bool) {
	l.mu.Lock()
	l.charge(usd, known)
	f := l.charged
	l.mu.Unlock()
	if f != nil {
		f()
	}
}

func (l *Ledger) charge(usd float64, known bool) {
	if !known {
		l.spent.Unknown++
		if l.task != nil {
			if l.spent.TasksUnknown == nil {
				l.spent.TasksUnknown = map[string]int{}
			}
			l.spent.TasksUnknown[l.task.key]++
		}
		return
	}
	l.spent.Run += usd
	if l.inPlan {
		l.spent.Plan += usd
	}
	if l.task != nil {
		l.spent.Tasks[l.task.key] += usd
	}
}

// Tripped is the first refusal since the task was entered, or nil.
func (l *Ledger) Tripped() *Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tripped
}

// Spent is a copy of the figures.
func (l *Ledger) Spent() Spent {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.spent
	s.Run, s.Plan = price.Round(s.Run), price.Round(s.Plan)
	s.Tasks = maps.Clone(l.spent.Tasks)
	for k, v := range s.Tasks {
		s.Tasks[k] = price.Round(v)
	}
	s.TasksUnknown = maps.Clone(l.spent.TasksUnknown)
	return s
}

// TaskSpent is what task key spent so far; false when one of its calls
// had no known price.
func (l *Ledger) TaskSpent(key string) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return price.Round(l.spent.Tasks[key]), l.spent.TasksUnknown[key] == 0
}

// ParseAmount reads an amount of dollars as people write it: "5", "$5",
// "2.50", "$0.75". It must be a finite number above 0.
func ParseAmount(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(t, "$")
	t = strings.TrimSuffix(strings.TrimSpace(t), "USD")
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v <= 0 || v != v || v > 1e9 {
		return 0, fmt.Errorf("budget %q is not an amount of dollars above 0 (write it as $2 or 2.50)", s)
	}
	return v, nil
}
