package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/plans"
)

type startWorkOptions struct {
	*globalOptions
	Streams *Streams
	Name    string
	JSON    bool
	// Verbose shows the plan's template warnings on every run.
	Verbose bool
	// Skip lists tasks to leave for a person.
	Skip []int
	// Bus joins a bus (ws:// or nats://) instead of the embedded one.
	Bus string
	// Overrides are config values set by flags.
	Overrides map[string]any
	// Ask says who answers permission questions (no one, or the bus).
	Ask askOptions
	// Budget is --budget: the run's budget in dollars, as written.
	Budget string
}

func newCmdStartWork(g *globalOptions, s *Streams, runF func(context.Context, *startWorkOptions) error) *cobra.Command {
	opts := &startWorkOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "start-work [plan]",
		Short: "Execute a plan's unchecked tasks, ticking each as it is verified",
		Long: `Execute a plan's unchecked tasks one by one, ticking each checkbox in the
plan file as the task is verified.

With a name, runs that plan (exact name first, else the newest plan whose name
contains it). Without one, resumes the plan in .weave/state.json, else runs
the only incomplete plan, else lists the plans to choose from.

A task whose body has sh or bash fenced blocks runs them in order from the
project root, then its verify blocks (` + "```sh verify" + `), which must exit 0.
Any other task is done by Tapestry with the configured model: it reads the
task, does the work with its tools, checks it and ticks it; the task's verify
blocks gate that tick. The plan's ## Verification checklist comes last, each
item checked by its verify blocks, else by the model. A model that stops with
the task unticked is nudged to continue (three nudges without progress pause
the plan). A failing task is retried (runbook.retries), then the plan pauses.
Ctrl-C pauses, as does a closed output pipe (| head); the next start-work
resumes at the first unchecked task.

With --workers N (run.workers), up to N ready tasks run at once, each in a git
worktree of its own (.weave/worktrees/) on a branch weave/<plan>-task-<N>; a
finished task is one commit, landed on the branch weave/<plan> one at a time
(run.land: rebase or merge), and ticked only after its verify blocks pass on
the landed tree. Tasks wait for what they depend on (**Depends**, [after: N]);
a plan without dependencies runs in order unless --infer-deps. When the plan is
done, weave says how to merge weave/<plan> (or fast-forwards with run.finish:
ff). --workers above 1 needs a git repository, a branch checked out and no
uncommitted changes to the files the plan touches.

With review.on_complete set, Weft and Warp then review the plan's work; the
plan stays complete, but the run exits 1 unless both approve.

With --budget (or budget.run, budget.plan, budget.task, a [budget: $N] tag
on a task's line), each model call is checked first with its worst case (its
max_tokens priced as output): one that could cross a budget is not made, the
tool call before it having finished, and the run pauses with what was spent
on what; ` + "`weave budget raise`" + ` or a higher --budget resumes it.

Exit codes: 0 done, 1 failed, invalid or not approved, 2 usage, 3 paused.`,
		Example: `  weave start-work                 # resume, or the only incomplete plan
  weave start-work hello-weave
  weave start-work oauth --json | jq -c 'select(.type == "task.done")'`,
		Args:              argsBetween(0, 1),
		ValidArgsFunction: completePlanNames(g),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			opts.Overrides = flagOverrides(c.Flags(), map[string]string{
				"retries":       "runbook.retries",
				"block-timeout": "runbook.block_timeout",
				"jwz":           "loop.jwz",
				"workers":       "run.workers",
				"infer-deps":    "run.infer_deps",
			})
			if err := budgetOverride(opts.Budget, opts.Overrides); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return startWorkRun(c.Context(), opts)
		},
	}
	addAskFlags(cmd, &opts.Ask)
	cmd.Flags().IntSliceVar(&opts.Skip, "skip", nil, "leave task N unchecked for a person to do (repeatable, or 2,5); tick it later with `weave task done`")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "show the plan's template warnings on every run, not only when they change")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON event per line instead of the live view")
	cmd.Flags().StringVar(&opts.Bus, "bus", "", "join a bus: ws://HOST:PORT (a `weave bus serve`) or nats://HOST:PORT (default: bus.url, WEAVE_BUS_URL, else the embedded bus)")
	cmd.Flags().Int("retries", 1, "times a failing task is tried again before the plan pauses (runbook.retries)")
	cmd.Flags().BoolVar(&g.TrustNow, "trust", false, "trust the project config as it is (shown on stderr) for this run and the next, as `weave trust --yes` does")
	cmd.Flags().Duration("block-timeout", 0, "bound on one shell block, 0 for none (runbook.block_timeout)")
	cmd.Flags().Int("workers", 1, "tasks run at once, 1 to 64, each in a git worktree of its own, landing on branch weave/<plan> only after its verify blocks pass there (run.workers)")
	cmd.Flags().Bool("infer-deps", false, "in a plan that names no dependency, treat tasks whose **Files** are disjoint as independent (run.infer_deps)")
	cmd.Flags().StringVar(&opts.Budget, "budget", "", "most the run may spend on models, in US dollars ($5, 2.50; budget.run): a model call that could cross it pauses the run (exit 3); a higher one resumes a run its budget paused")
	cmd.Flags().Bool("jwz", false, "also append the run's loop events to the project's jwz store, .jwz/messages.jsonl, for idle and `jwz read` (loop.jwz)")
	return cmd
}

func startWorkRun(ctx context.Context, opts *startWorkOptions) error {
	project, err := opts.project()
	if err != nil {
		return err
	}
	cfg, _, err := opts.loadConfig(project, opts.Overrides)
	if err != nil {
		return err
	}
	if err := cfg.CheckShell(); err != nil {
		return usageErrorf("%v", err)
	}
	warnUnrunHooks(opts.Streams.ErrOut, cfg)
	askOpts, err := opts.Ask.hostOptions(nil)
	if err != nil {
		return err
	}
	h, closeHost, err := openLoggedHost(ctx, project, cfg, append([]host.Option{host.WithBus(opts.Bus), host.WithTools(), host.WithNotice(noticeTo(opts.Streams.ErrOut)), host.WithVerbose(opts.Verbose), host.WithSkip(opts.Skip...)}, askOpts...)...)
	if err != nil {
		return err
	}
	defer opts.reportConfigChange(project)
	// Every plugin ends with the run, however the run ends.
	defer closeHost()
	printWarnings(opts.Streams.ErrOut, h.Warnings())
	view := newRunView(opts.Streams, opts.JSON, cfg.Runbook.OutputTail)
	res, err := h.StartWork(ctx, opts.Name, view.Observe)
	view.Close()
	var refused *run.WorkersRefusedError
	if errors.As(err, &refused) {
		return usageErrorf("%v", err)
	}
	if err != nil {
		return err
	}
	if be := h.Budget().Tripped(); be != nil && res.Status == run.StatusPaused {
		return budgetPaused(opts.Streams, be)
	}
	return reportRun(opts, res)
}

// reportRun says how a run ended and picks the exit code.
func reportRun(opts *startWorkOptions, res run.Result) error {
	w := opts.Streams.ErrOut
	switch res.Status {
	case run.StatusDone:
		if res.Merge != "" {
			fmt.Fprintln(w, res.Merge)
		}
		if res.Review != nil && res.Review.Interrupted {
			// The plan is complete; only its review was cut short.
			fmt.Fprintf(w, "review interrupted: plan %s is done; run `%s` to have its work reviewed\n", res.Plan.Name, reviewCommand(res.Plan.Name, res.Review.Since))
			return &exitError{code: exitPaused}
		}
		if bad := res.Review.Rejected(); len(bad) > 0 {
			// The plan is complete; its work did not pass review.
			return &exitError{code: exitFailed, err: rejection(res.Plan.Name, res.Review.Since, bad)}
		}
		return nil
	case run.StatusComplete:
		fmt.Fprintln(opts.Streams.Out, res.Resolution.Message())
		return nil
	case run.StatusPaused:
		var landing *run.LandError
		if errors.As(res.Err, &landing) {
			fmt.Fprintf(w, "weave: %v\n", landing)
		}
		fmt.Fprintf(w, "paused: run `weave start-work` to resume at the first unchecked task\n")
		return &exitError{code: exitPaused}
	case run.StatusFailed:
		fmt.Fprintf(w, "weave: %v\n", res.Err)
		var blocked *agents.HookBlockError
		if errors.As(res.Err, &blocked) {
			fmt.Fprintf(w, "a hook's block is a rule of the project and is not retried: change the task or the hook %s (`weave hooks list`), then run `weave start-work %s`\n", blocked.Hook, res.Plan.Name)
		} else if errors.Is(res.Err, agents.ErrNeedsModel) {
			name, task := "PLAN", "N"
			if res.Plan != nil {
				name = res.Plan.Name
				if t, ok := res.Plan.Next(); ok && t.Number > 0 {
					task = strconv.Itoa(t.Number)
				}
			}
			fmt.Fprintf(w, "this task has no sh/bash work blocks, so Tapestry needs a model to do it, and none is configured:\n"+
				"  set model.provider (%s) and model.name in .weave/config.yaml (or WEAVE_MODEL_PROVIDER and WEAVE_MODEL_NAME),\n"+
				"  or do the task yourself and tick it with `weave task done %s %s`; then run `weave start-work %s` again\n", model.Choices(), name, task, name)
		} else if res.Plan != nil {
			fmt.Fprintf(w, "fix the cause, then run `weave start-work %s` to retry it; logs are in .weave/logs/%s/\n", res.Plan.Name, res.Plan.Name)
		}
		return &exitError{code: exitFailed}
	case run.StatusInvalid:
		printReport(w, res.Plan, res.Report)
		return &exitError{code: exitFailed, err: fmt.Errorf("plan %q has %d error(s); fix them and run again", res.Plan.Name, len(res.Report.Errors))}
	case run.StatusBlocked:
		return &exitError{code: exitFailed, err: res.Err}
	case run.StatusChoose:
		return &exitError{code: exitUsage, err: errors.New(res.Resolution.Message())}
	default: // not found, none
		return &exitError{code: exitFailed, err: errors.New(res.Resolution.Message())}
	}
}

func printReport(w interface{ Write([]byte) (int, error) }, p *plans.Plan, r plans.Report) {
	for _, e := range r.Errors {
		fmt.Fprintf(w, "%s: error: %s\n", problemPos(p, e), e.Msg)
	}
	for _, e := range r.Warnings {
		fmt.Fprintf(w, "%s: warning: %s\n", problemPos(p, e), e.Msg)
	}
}

func problemPos(p *plans.Plan, pr plans.Problem) string {
	name := layout.PlanShown(p.Name)
	if pr.Line > 0 {
		return fmt.Sprintf("%s:%d", name, pr.Line)
	}
	return name
}
