package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plans"
)

func newCmdTask(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Tick or untick a plan's task by hand",
		Example: `  weave task done hello-weave 2
  weave task undo hello-weave 2
  weave task undo hello-weave 2 --revert`,
		Long: `Tick (done) or untick (undo) one task of a plan, for work a person did.
The checkbox is patched through the same door a run ticks through: done runs
the task's verify blocks first and ticks only when they pass, unless --force
says to tick anyway (which the host log, and .weave/state.json when the plan
is the active one, record as forced by a person). When the plan is the
active one, .weave/state.json records that a person did it.`,
	}
	cmd.AddCommand(newCmdTaskMark(g, s, true), newCmdTaskMark(g, s, false))
	return cmd
}

func newCmdTaskMark(g *globalOptions, s *Streams, done bool) *cobra.Command {
	use, short, example := "done PLAN N", "Tick task N of PLAN as done by a person", `  weave task done hello-weave 2
  weave task done hello-weave "Write a greeting"`
	if !done {
		use, short, example = "undo PLAN N", "Untick task N of PLAN", `  weave task undo hello-weave 2
  weave task undo hello-weave 2 --revert`
	}
	var force, revert bool
	cmd := &cobra.Command{
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
			if !done && force && !revert {
				return usageErrorf("--force goes with --revert: plain undo only unticks and needs no forcing")
			}
			return taskMarkRun(c.Context(), g, s, args[0], args[1], done, force, revert)
		},
	}
	if done {
		cmd.Flags().BoolVar(&force, "force", false, "tick even if the task's verify blocks fail (recorded as forced by a person)")
	} else {
		cmd.Flags().BoolVar(&revert, "revert", false, "also revert the task's commit on the run's integration branch (weave/<plan>)")
		cmd.Flags().BoolVar(&force, "force", false, "with --revert: revert without asking even when other tasks depend on this one")
	}
	return cmd
}

func taskMarkRun(ctx context.Context, g *globalOptions, s *Streams, planName, which string, done, force, revert bool) error {
	project, p, err := g.findPlan(planName)
	if err != nil {
		return err
	}
	task, err := pickTask(p, which)
	if err != nil {
		return err
	}
	if revert && !force {
		if deps := dependents(p, task); len(deps) > 0 {
			if err := confirmRevertOfDependedOn(s, p, task, deps); err != nil {
				return err
			}
		}
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
	cfg, _, err := g.loadConfig(project, nil)
	if err != nil {
		return err
	}
	reverted := ""
	if revert {
		st, _, err := store.Load()
		if err != nil {
			return err
		}
		if reverted, err = revertLanded(ctx, project, st, p, task); err != nil {
			return err
		}
		fmt.Fprintln(s.Out, reverted)
	}
	// The host log records a tick a person forced past its verify blocks.
	h, closeHost, err := openLoggedHost(ctx, project, cfg, host.WithTools())
	if err != nil {
		return err
	}
	defer closeHost()
	label := "task " + task.Label()
	verified := ""
	if done && !task.Done {
		// The tick door: the task's verify blocks run first, as a run's
		// blocks do (through the gate and the hooks, as Tapestry).
		if verified, err = verifyByHand(ctx, h, p, task, force); err != nil {
			return err
		}
	}
	door := h.Tools().Tick
	if !done {
		door = h.Tools().Untick
	}
	np, already, err := door(p, task)
	if err != nil {
		return err
	}
	pr := np.Progress()
	if already {
		state := "unchecked"
		if done {
			state = "ticked"
		}
		fmt.Fprintf(s.Out, "%s of %s is already %s (%d/%d done)\n", label, np.Name, state, pr.Completed, pr.Total)
		return nil
	}
	forced := force && verified != verifiedPassed && verified != verifiedNone
	if forced {
		h.Logger().Warn("a person ticked a task past its verify blocks (task done --force)", "plan", np.Name, "task", task.Label(), "verify", verified)
	}
	recorded, err := recordPerson(store, np, task, done, forced, pr.Complete())
	if err != nil {
		return err
	}
	verb := "ticked"
	if !done {
		verb = "unticked"
	}
	fmt.Fprintf(s.Out, "%s %s of %s (%d/%d done)%s%s\n", verb, label, np.Name, pr.Completed, pr.Total, verified, recorded)
	return nil
}

// What verifyByHand says of a task's verify blocks, in the message.
const (
	verifiedNone   = "; it has no verify blocks"
	verifiedPassed = "; its verify blocks passed"
)

// verifyByHand runs the verify blocks of task t of p before `task done`
// ticks it. It returns what the message says of them, or an error that
// refuses the tick; with force a failing block is reported, not an error.
func verifyByHand(ctx context.Context, h *host.Host, p *plans.Plan, t plans.Task, force bool) (string, error) {
	n := len(t.VerifyBlocks())
	if n == 0 {
		return verifiedNone, nil
	}
	refusal, err := h.Tools().Verify(ctx, tools.Caller{Agent: agents.Tapestry}, "", t)
	if err != nil {
		return "", err
	}
	if refusal == "" {
		return verifiedPassed, nil
	}
	why := strings.TrimPrefix(refusal, "The tick was refused: ")
	why, _, _ = strings.Cut(why, "\nFix the cause")
	if !force {
		return "", fmt.Errorf("task %s of %s not ticked: %s\nfix it and run this again, or tick it anyway with `weave task done %s %s --force`",
			t.Label(), p.Name, why, p.Name, taskArg(t))
	}
	first, _, _ := strings.Cut(why, ". It runs:")
	return "; FORCED by a person past a failing verify block (" + first + ")", nil
}

// taskArg names t on a command line.
func taskArg(t plans.Task) string {
	if t.Number > 0 {
		return strconv.Itoa(t.Number)
	}
	return strconv.Quote(t.Title)
}

// recordPerson notes in state.json, when p is the active plan, that a
// person ticked (or unticked) the task. A tick that completes the plan ends
// its pause: a finished plan is finished, not paused on a stale error.
func recordPerson(store *plans.Store, p *plans.Plan, t plans.Task, done, forced, complete bool) (string, error) {
	st, _, err := store.Load()
	if err != nil || st == nil || !st.IsActive(p.Path) {
		return "", err
	}
	rec := st.Record(t.Key())
	rec.Done, rec.UpdatedAt, rec.Skipped, rec.Forced = done, time.Now().UTC(), false, done && forced
	rec.By = ""
	if done {
		rec.By = plans.ByPerson
	}
	if done && complete {
		st.Paused, st.PausedReason, st.LastError, st.InFlight = false, "", "", nil
	}
	if err := store.Save(st); err != nil {
		return "", err
	}
	if done && forced {
		return "; recorded in .weave/state.json as forced by a person", nil
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
		if t, ok := p.ByOrdinal(n); ok {
			return t, nil
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
	for _, t := range p.Tasks {
		if t.Done != checked {
			continue
		}
		out = append(out, fmt.Sprintf("%d\t%s", t.Ordinal(), t.Title))
	}
	return out
}
