package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/price"
	"github.com/weavehq/weave/plans"
)

func newCmdBudget(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Show what the active plan spent on models, and raise a budget that paused it",
		Long: `A run keeps what its model calls cost against its budgets: the run's
(budget.run, start-work --budget), the plan's (budget.plan) and each task's
(budget.task, or a [budget: $N] tag on the task's line). A call that could
cross one is not made and the run pauses (exit 3). What was spent, and the
raises, are kept in .weave/state.json, so a resumed run goes on from them.`,
		Example: `  weave budget show
  weave budget raise 5              # the budget that paused the run, by $5
  weave budget raise --task 3 1.50`,
	}
	cmd.AddCommand(newCmdBudgetShow(g, s), newCmdBudgetRaise(g, s))
	return cmd
}

func newCmdBudgetShow(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show",
		Short:   "Show what the active plan's runs spent, and the raises on record",
		Example: "  weave budget show\n  weave budget show --json | jq .run_usd",
		Args:    argsBetween(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			project, err := g.project()
			if err != nil {
				return err
			}
			st, warning, err := plans.ProjectStore(project).Read()
			if err != nil {
				return err
			}
			if warning != "" {
				s.palette().warning(s.ErrOut, warning)
			}
			sp := &plans.Spending{}
			if st != nil && st.Spending != nil {
				sp = st.Spending
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(sp)
			}
			if st == nil {
				fmt.Fprintln(s.Out, "no active plan: nothing spent on record")
				return nil
			}
			fmt.Fprintf(s.Out, "plan %s: run %s, plan %s%s\n", st.PlanName, price.Format(sp.RunUSD, true), price.Format(sp.PlanUSD, true), unpriced(sp.UnpricedCalls))
			for _, k := range slices.Sorted(maps.Keys(sp.TasksUSD)) {
				fmt.Fprintf(s.Out, "  task %s: %s\n", k, price.Format(sp.TasksUSD[k], true))
			}
			for _, r := range sp.Raises {
				fmt.Fprintf(s.Out, "  raised %s by %s on %s\n", scopeName(r.Scope, r.Task), price.Format(r.USD, true), r.At.Local().Format("2006-01-02 15:04"))
			}
			if st.Paused && sp.PausedBy != "" {
				fmt.Fprintf(s.Out, "paused by %s's budget: %s\n", scopeName(sp.PausedBy, sp.PausedTask), st.PausedReason)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the spending record as JSON")
	return cmd
}

func unpriced(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d call(s) of unknown price)", n)
}

func scopeName(scope, task string) string {
	if scope == string(budget.ScopeTask) {
		return "task " + task
	}
	return "the " + scope
}

func newCmdBudgetRaise(g *globalOptions, s *Streams) *cobra.Command {
	var runScope, planScope bool
	var task int
	cmd := &cobra.Command{
		Use:   "raise [--run|--plan|--task N] AMOUNT",
		Short: "Raise a budget of the active plan by AMOUNT dollars, recorded in .weave/state.json",
		Long: `Raise a budget of the active plan by AMOUNT US dollars ($5, 2.50): the run's,
the plan's or task N's; without a flag, the one that paused the plan. The
raise is recorded in .weave/state.json with the time; the next
` + "`weave start-work`" + ` resumes with it. It takes the project's lock, so it is
refused while a run is going (stop it first).`,
		Example: `  weave budget raise 5
  weave budget raise --task 3 '$1.50'
  weave budget raise --run 10 && weave start-work`,
		Args: argsBetween(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			project, err := g.project()
			if err != nil {
				return err
			}
			amount, err := budget.ParseAmount(args[0])
			if err != nil {
				return usageErrorf("%v", err)
			}
			n := 0
			for _, set := range []bool{runScope, planScope, c.Flags().Changed("task")} {
				if set {
					n++
				}
			}
			if n > 1 {
				return usageErrorf("give one of --run, --plan and --task N")
			}
			store := plans.ProjectStore(project)
			release, err := store.Lock()
			if err != nil {
				var locked *plans.LockedError
				if errors.As(err, &locked) {
					return &exitError{code: exitFailed, err: fmt.Errorf("a run is going: stop it (Ctrl-C pauses it), then raise its budget: %w", err)}
				}
				return err
			}
			defer func() { _ = release() }()
			st, warning, err := store.Load()
			if err != nil {
				return err
			}
			if warning != "" {
				s.palette().warning(s.ErrOut, warning)
			}
			if st == nil {
				return &exitError{code: exitFailed, err: errors.New("no active plan to raise a budget for: start one with `weave start-work --budget AMOUNT`")}
			}
			sp := st.Spent()
			r := plans.BudgetRaise{USD: amount, At: time.Now().UTC()}
			switch {
			case runScope:
				r.Scope = string(budget.ScopeRun)
			case planScope:
				r.Scope = string(budget.ScopePlan)
			case c.Flags().Changed("task"):
				if task <= 0 {
					return usageErrorf("--task takes a task's number, as the plan numbers it")
				}
				r.Scope, r.Task = string(budget.ScopeTask), strconv.Itoa(task)
			case sp.PausedBy == string(budget.ScopeTask) && sp.PausedTask != "":
				r.Scope, r.Task = sp.PausedBy, sp.PausedTask
			case sp.PausedBy != "":
				r.Scope = sp.PausedBy
			default:
				r.Scope = string(budget.ScopeRun)
			}
			sp.Raises = append(sp.Raises, r)
			if err := store.Save(st); err != nil {
				return err
			}
			fmt.Fprintf(s.ErrOut, "raised %s's budget by %s (recorded in .weave/state.json); run `weave start-work` to resume\n", scopeName(r.Scope, r.Task), price.Format(amount, true))
			return nil
		},
	}
	cmd.Flags().BoolVar(&runScope, "run", false, "raise the run's budget")
	cmd.Flags().BoolVar(&planScope, "plan", false, "raise the plan's budget")
	cmd.Flags().IntVar(&task, "task", 0, "raise task N's budget")
	return cmd
}

// budgetOverride puts a --budget amount in the config overrides as
// budget.run; "" leaves it.
func budgetOverride(flag string, overrides map[string]any) error {
	if flag == "" {
		return nil
	}
	v, err := budget.ParseAmount(flag)
	if err != nil {
		return usageErrorf("--budget: %v", err)
	}
	overrides["budget.run"] = v
	return nil
}

// budgetPaused says that a budget stopped the work, what was spent on
// what, and how to go on; the exit code is 3 (paused).
func budgetPaused(s *Streams, e *budget.Error) error {
	fmt.Fprintf(s.ErrOut, "paused: %v\n%s\n", e, e.Hint())
	return &exitError{code: exitPaused}
}

// activeSpending is the active plan's spending record in state.json; nil
// when there is none.
func activeSpending(project string, st run.ProjectStatus) *plans.Spending {
	if st.Active == "" {
		return nil
	}
	s, _, err := plans.ProjectStore(project).Read()
	if err != nil || s == nil {
		return nil
	}
	return s.Spending
}

// moneyLine says what the active plan cost and its budgets, for status:
// "cost $0.0123; run $0.0100 of $5.00, task 3 $0.0050 of $0.0100"; "" when
// there is nothing to say.
func moneyLine(cost *chat.Cost, sp *plans.Spending) string {
	var parts []string
	if cost != nil {
		parts = append(parts, "cost "+cost.String())
	}
	if sp != nil {
		if l := sp.RunLimit(); l > 0 {
			parts = append(parts, fmt.Sprintf("run %s of %s", price.Format(sp.RunUSD, true), price.Format(l, true)))
		}
		if l := sp.PlanLimit(); l > 0 {
			parts = append(parts, fmt.Sprintf("plan %s of %s", price.Format(sp.PlanUSD, true), price.Format(l, true)))
		}
		for _, k := range slices.Sorted(maps.Keys(sp.TaskBudgets)) {
			parts = append(parts, fmt.Sprintf("task %s %s of %s", k, price.Format(sp.TasksUSD[k], true), price.Format(sp.TaskLimit(k), true)))
		}
		if sp.UnpricedCalls > 0 {
			parts = append(parts, fmt.Sprintf("%d call(s) of unknown price", sp.UnpricedCalls))
		}
	}
	return strings.Join(parts, "; ")
}
