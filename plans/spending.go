package plans

import "time"

// Spending is what a plan's runs spent on models and the budgets a person
// raised for it, kept in state.json (which only the host writes) so that a
// resumed run goes on from it rather than from a fresh budget. Amounts are
// US dollars.
type Spending struct {
	// RunUSD is what the run spent, resumes included; PlanUSD what the
	// plan's tasks spent; TasksUSD each task's, by Task.Key().
	RunUSD   float64            `json:"run_usd"`
	PlanUSD  float64            `json:"plan_usd"`
	TasksUSD map[string]float64 `json:"tasks_usd,omitempty"`
	// RunBudgetUSD and PlanBudgetUSD are the run's and the plan's budgets
	// as the run started with them (budget.run or --budget, budget.plan),
	// before raises; a resumed run keeps them unless config or a flag
	// gives others. 0: none.
	RunBudgetUSD  float64 `json:"run_budget_usd,omitempty"`
	PlanBudgetUSD float64 `json:"plan_budget_usd,omitempty"`
	// UnpricedCalls counts the calls whose model had no known price: their
	// cost is in none of the figures.
	UnpricedCalls int `json:"unpriced_calls,omitempty"`
	// TaskBudgets are the tasks' [budget: $N] tags as a run first read
	// them, by key: an edit of the plan file can lower a task's budget,
	// never raise it; a raise goes through `weave budget raise`.
	TaskBudgets map[string]float64 `json:"task_budgets_usd,omitempty"`
	// Raises are the raises `weave budget raise` recorded, oldest first.
	Raises []BudgetRaise `json:"raises,omitempty"`
	// PausedBy names the budget that paused the plan last (run, plan or
	// task) and PausedTask the task's key; empty when none did.
	PausedBy   string `json:"paused_by,omitempty"`
	PausedTask string `json:"paused_task,omitempty"`
}

// BudgetRaise is one raise of a budget by a person.
type BudgetRaise struct {
	// Scope is run, plan or task; Task the task's key for task.
	Scope string    `json:"scope"`
	Task  string    `json:"task,omitempty"`
	USD   float64   `json:"usd"`
	At    time.Time `json:"at"`
}

// Raised sums the raises of scope (and task, for a task's budget).
func (s *Spending) Raised(scope, task string) float64 {
	if s == nil {
		return 0
	}
	var sum float64
	for _, r := range s.Raises {
		if r.Scope == scope && r.Task == task {
			sum += r.USD
		}
	}
	return sum
}

// RunLimit is the run's budget with its raises; 0: none.
func (s *Spending) RunLimit() float64 {
	return withRaises(s.RunBudgetUSD, s.Raised("run", ""))
}

// PlanLimit is the plan's budget with its raises; 0: none.
func (s *Spending) PlanLimit() float64 {
	return withRaises(s.PlanBudgetUSD, s.Raised("plan", ""))
}

// TaskLimit is task key's budget as first read, with its raises; 0: none
// on record.
func (s *Spending) TaskLimit(key string) float64 {
	return withRaises(s.TaskBudgets[key], s.Raised("task", key))
}

// withRaises is a budget with its raises: none stays none.
func withRaises(base, raised float64) float64 {
	if base <= 0 {
		return 0
	}
	return base + raised
}

// Spent returns st's spending record, creating it when missing.
func (s *State) Spent() *Spending {
	if s.Spending == nil {
		s.Spending = &Spending{}
	}
	return s.Spending
}
