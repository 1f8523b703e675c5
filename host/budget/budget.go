package budget

import (
	"context"
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
	// Held is what the calls under way for the same budget may still
	// cost (other workers' calls).
	Held float64
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
	under := ""
	if e.Held > 0 {
		under = fmt.Sprintf(", calls under way could cost up to %s more", money(e.Held))
	}
	return fmt.Sprintf("budget: the next model call could cross %s budget of %s: %s of it is spent%s, and the call could cost up to %s (%s)",
		what, money(e.Limit), money(e.Spent), under, money(e.Need), e.Spending())
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
	// Calls counts the calls charged in this process, priced or not.
	Calls int
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
	// trippedBy is the first refusal of each task entered with Scope,
	// by key.
	trippedBy map[string]*Error
	// held is the worst case of the calls under way (Begin), in all and
	// by task key: calls made at once are checked against what the
	// others may still cost.
	held     float64
	heldTask map[string]float64
	// charged, when set, is called after each charge, without the lock.
	charged func()
}

// current is the task the run is on: one Enter, or one Scope, with what
// its calls cost since (in the ledger's lock).
type current struct {
	key, label string
	limit      float64
	// allow, when set, bounds the calls instead of limit: the task was
	// handed out by a coordinator elsewhere with it (ScopeAllowance).
	allow *Allowance
	// holder, when set, holds each call's worst case in the ledger of the
	// coordinator that handed the task out, too (ScopeHeld, hold.go).
	holder Holder
	// spent, calls and unknown are what the calls made under this scope
	// cost, how many were charged, and how many of them had no price.
	spent          float64
	calls, unknown int
}

// taskCtx is the context key of the task a call is for (Scope).
type taskCtx struct{}

// Scope is ctx carrying task key (labelled label in messages) with a
// budget of limit dollars (0: none): the calls made with it, or with a
// context made from it, are checked and charged as that task's (CheckFor,
// ChargeFor), whatever task Enter made current. Tasks carried out at once
// each go with their own; the run's and the plan's budgets are shared. A
// refusal the task had before is forgotten.
func (l *Ledger) Scope(ctx context.Context, key, label string, limit float64) context.Context {
	l.mu.Lock()
	delete(l.trippedBy, key)
	l.mu.Unlock()
	return context.WithValue(ctx, taskCtx{}, &current{key: key, label: label, limit: limit})
}

// Carry is into carrying the task from, when from carries one: a call
// made in another goroutine (an agent's, through its host services) stays
// the task's.
func Carry(into, from context.Context) context.Context {
	if t, ok := from.Value(taskCtx{}).(*current); ok {
		return context.WithValue(into, taskCtx{}, t)
	}
	return into
}

// taskFor is the task the calls made with ctx are for: its Scope, else
// the one entered; nil for none. l.mu is held.
func (l *Ledger) taskFor(ctx context.Context) *current {
	if ctx != nil {
		if t, ok := ctx.Value(taskCtx{}).(*current); ok {
			return t
		}
	}
	return l.task
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
func (l *Ledger) Active() bool { return l.ActiveFor(context.Background()) }

// ActiveFor reports whether any budget holds for the next call made with
// ctx.
func (l *Ledger) ActiveFor(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active(l.taskFor(ctx))
}

func (l *Ledger) active(t *current) bool {
	return l.run > 0 || l.inPlan && l.plan > 0 || t != nil && (t.limit > 0 || t.allow != nil)
}

// Check says whether a call to model whose worst case is worst dollars
// (known: false when it could not be priced) may be made: nil, or an
// *Error, which is also kept as Tripped.
func (l *Ledger) Check(model string, worst float64, known bool) error {
	return l.CheckFor(context.Background(), model, worst, known)
}

// CheckFor is Check for a call made with ctx: against the budget of the
// task ctx carries (Scope), else of the one entered. A refusal is also
// kept as the task's (TrippedFor).
func (l *Ledger) CheckFor(ctx context.Context, model string, worst float64, known bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.check(l.taskFor(ctx), model, worst, known)
}

// Begin is CheckFor for a call about to be made, which, when it may be
// made, holds its worst case against the budgets until end is called with
// what it cost (charged: false when it failed and costs nothing): calls
// made at once, by workers, cannot together cross a budget that each fits
// alone.
func (l *Ledger) Begin(ctx context.Context, model string, worst float64, known bool) (end func(usd float64, known, charged bool), err error) {
	l.mu.Lock()
	t := l.taskFor(ctx)
	if err := l.check(t, model, worst, known); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	l.hold(t, worst)
	l.mu.Unlock()
	var once sync.Once
	return func(usd float64, cknown, charged bool) {
		once.Do(func() {
			l.mu.Lock()
			l.hold(t, -worst)
			if !charged {
				l.mu.Unlock()
				return
			}
			l.charge(t, usd, cknown)
			f := l.charged
			l.mu.Unlock()
			if f != nil {
				f()
			}
		})
	}, nil
}

// hold adds usd to what the calls under way may cost. l.mu is held.
func (l *Ledger) hold(t *current, usd float64) {
	l.held = max(0, l.held+usd)
	if t == nil {
		return
	}
	if l.heldTask == nil {
		l.heldTask = map[string]float64{}
	}
	if v := l.heldTask[t.key] + usd; v > 1e-12 {
		l.heldTask[t.key] = v
	} else {
		delete(l.heldTask, t.key)
	}
}

// check is CheckFor for task t. l.mu is held.
func (l *Ledger) check(t *current, model string, worst float64, known bool) error {
	if !l.active(t) {
		return nil
	}
	e := l.refusal(t, model, worst, known)
	if e == nil {
		return nil
	}
	if l.tripped == nil {
		l.tripped = e
	}
	if t != nil {
		if l.trippedBy == nil {
			l.trippedBy = map[string]*Error{}
		}
		if l.trippedBy[t.key] == nil {
			l.trippedBy[t.key] = e
		}
	}
	return e
}

func (l *Ledger) refusal(t *current, model string, worst float64, known bool) *Error {
	base := Error{Model: model, Need: worst, Run: l.spent.Run, Plan: l.spent.Plan}
	if t != nil {
		base.TaskKey, base.Task = t.key, t.label
	}
	if !known {
		e := base
		e.NoPrice, e.Scope = true, l.tightest(t)
		return &e
	}
	if t != nil && t.allow != nil && t.spent+l.heldTask[t.key]+worst > t.allow.USD {
		a := t.allow
		e := base
		e.Scope, e.Limit, e.Spent, e.Held = a.Scope, a.Limit, a.Spent+t.spent, l.heldTask[t.key]
		return &e
	}
	if t != nil && t.limit > 0 && l.spent.Tasks[t.key]+l.heldTask[t.key]+worst > t.limit {
		e := base
		e.Scope, e.Limit, e.Spent, e.Held = ScopeTask, t.limit, l.spent.Tasks[t.key], l.heldTask[t.key]
		return &e
	}
	if l.inPlan && l.plan > 0 && l.spent.Plan+l.held+worst > l.plan {
		e := base
		e.Scope, e.Limit, e.Spent, e.Held = ScopePlan, l.plan, l.spent.Plan, l.held
		return &e
	}
	if l.run > 0 && l.spent.Run+l.held+worst > l.run {
		e := base
		e.Scope, e.Limit, e.Spent, e.Held = ScopeRun, l.run, l.spent.Run, l.held
		return &e
	}
	return nil
}

// tightest is the scope of the most specific budget that holds.
func (l *Ledger) tightest(t *current) Scope {
	switch {
	case t != nil && t.allow != nil:
		return t.allow.Scope
	case t != nil && t.limit > 0:
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
	l.ChargeFor(context.Background(), usd, known)
}

// ChargeFor is Charge for a call made with ctx: to the task ctx carries
// (Scope), else to the one entered.
func (l *Ledger) ChargeFor(ctx context.Context, usd float64, known bool) {
	l.mu.Lock()
	l.charge(l.taskFor(ctx), usd, known)
	f := l.charged
	l.mu.Unlock()
	if f != nil {
		f()
	}
}

func (l *Ledger) charge(t *current, usd float64, known bool) {
	l.spent.Calls++
	if t != nil {
		t.calls++
		if known {
			t.spent += usd
		} else {
			t.unknown++
		}
	}
	if !known {
		l.spent.Unknown++
		if t != nil {
			if l.spent.TasksUnknown == nil {
				l.spent.TasksUnknown = map[string]int{}
			}
			l.spent.TasksUnknown[t.key]++
		}
		return
	}
	l.spent.Run += usd
	if l.inPlan {
		l.spent.Plan += usd
	}
	if t != nil {
		l.spent.Tasks[t.key] += usd
	}
}

// Tripped is the first refusal since the task was entered, or nil.
func (l *Ledger) Tripped() *Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tripped
}

// TrippedFor is the first refusal of a call made for task key since it
// was scoped (Scope), or nil.
func (l *Ledger) TrippedFor(key string) *Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.trippedBy[key]
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
