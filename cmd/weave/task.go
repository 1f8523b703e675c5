package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/plans"
)

func newCmdTask(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Tick or untick a plan's task by hand",
		Example: `  weave task done hello-weave 2
  weave task undo hello-weave 2`,
		Long: `Tick (done) or untick (undo) one task of a plan, for work a person did.
The checkbox is patched through the same door a run ticks through, and when
the plan is the active one, .weave/state.json records that a person did it.`,
	}
	cmd.AddCommand(newCmdTaskMark(g, s, true), newCmdTaskMark(g, s, false))
	return cmd
}

func newCmdTaskMark(g *globalOptions, s *Streams, done bool) *cobra.Command {
	use, short, example := "done PLAN N", "Tick task N of PLAN as done by a person", `  weave task done hello-weave 2
  weave task done hello-weave "Write a greeting"`
	if !done {
		use, short, example = "undo PLAN N", "Untick task N of PLAN", `  weave task undo hello-weave 2`
	}
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    argsBetween(2, 2),
		ValidArgsFunction: func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return completePlanNames(g)(c, args, prefix)
			}
			return completeTaskNumbers(g, args[0], !done), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			return taskMarkRun(c.Context(), g, s, args[0], args[1], done)
		},
	}
}

func taskMarkRun(ctx context.Context, g *globalOptions, s *Streams, planName, which string, done bool) error {
	project, p, err := g.findPlan(planName)
	if err != nil {
		return err
	}
	task, err := pickTask(p, which)
	if err != nil {
		return err
	}
	store := plans.ProjectStore(project)
	release, err := store.Lock()
	var locked *plans.LockedError
	if errors.As(err, &locked) {
		return fmt.Errorf("a run (pid %d) is driving this project; pause it (Ctrl-C) and try again", locked.PID)
	}
	if err != nil {
		return err
	}
	defer release()
	cfg, _, err := loadConfig(project, nil)
	if err != nil {
		return err
	}
	h, err := host.Open(ctx, project, cfg, host.WithTools())
	if err != nil {
		return err
	}
	defer h.Close(context.WithoutCancel(ctx))
	door := h.Tools().Tick
	if !done {
		door = h.Tools().Untick
	}
	np, already, err := door(p, task)
	if err != nil {
		return err
	}
	label := "task " + task.Label()
	pr := np.Progress()
	if already {
		state := "unchecked"
		if done {
			state = "ticked"
		}
		fmt.Fprintf(s.Out, "%s of %s is already %s (%d/%d done)\n", label, np.Name, state, pr.Completed, pr.Total)
		return nil
	}
	recorded, err := recordPerson(store, np, task, done)
	if err != nil {
		return err
	}
	verb := "ticked"
	if !done {
		verb = "unticked"
	}
	fmt.Fprintf(s.Out, "%s %s of %s (%d/%d done)%s\n", verb, label, np.Name, pr.Completed, pr.Total, recorded)
	return nil
}

// recordPerson notes in state.json, when p is the active plan, that a
// person ticked (or unticked) the task.
func recordPerson(store *plans.Store, p *plans.Plan, t plans.Task, done bool) (string, error) {
	st, _, err := store.Load()
	if err != nil || st == nil || !st.IsActive(p.Path) {
		return "", err
	}
	rec := st.Record(t.Key())
	rec.Done, rec.UpdatedAt, rec.Skipped = done, time.Now().UTC(), false
	rec.By = ""
	if done {
		rec.By = plans.ByPerson
	}
	if err := store.Save(st); err != nil {
		return "", err
	}
	if done {
		return "; recorded in .weave/state.json as done by a person", nil
	}
	return "", nil
}

// pickTask finds a task by number, else by a unique title (exact, then
// containing the text, case-insensitive).
func pickTask(p *plans.Plan, which string) (plans.Task, error) {
	if n, err := strconv.Atoi(which); err == nil {
		for i, t := range p.Tasks {
			if t.Number == n || (t.Number == 0 && i+1 == n) {
				return t, nil
			}
		}
		return plans.Task{}, fmt.Errorf("plan %s has no task %d (it has %d tasks; see `weave plan show %s`)", p.Name, n, len(p.Tasks), p.Name)
	}
	t, found, ok := p.FindTitle(which)
	if ok {
		return t, nil
	}
	if len(found) == 0 {
		return plans.Task{}, fmt.Errorf("plan %s has no task titled %q; see `weave plan show %s`", p.Name, which, p.Name)
	}
	return plans.Task{}, fmt.Errorf("%q matches %d tasks of %s; give the task's number", which, len(found), p.Name)
}

// completeTaskNumbers lists the numbers of the plan's tasks that are
// unchecked (or checked), with their titles.
func completeTaskNumbers(g *globalOptions, plan string, checked bool) []string {
	_, p, err := g.findPlan(plan)
	if err != nil {
		return nil
	}
	var out []string
	for i, t := range p.Tasks {
		if t.Done != checked {
			continue
		}
		n := t.Number
		if n == 0 {
			n = i + 1
		}
		out = append(out, fmt.Sprintf("%d\t%s", n, t.Title))
	}
	return out
}
