package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/plans"
)

type planNewOptions struct {
	*globalOptions
	Streams *Streams
	Request string
	Name    string
}

func newCmdPlanNew(g *globalOptions, s *Streams) *cobra.Command {
	opts := &planNewOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "new REQUEST",
		Short: "Have Pattern write a plan for REQUEST into .weave/plans/",
		Long: `Have Pattern, the planner, turn REQUEST into a plan: it researches the
project with its read-only tools and writes .weave/plans/<name>.md in the plan
template. Weave validates the plan before Pattern reports done, and sends
Pattern back to fix the file while the validator finds errors or warnings (a
few rounds at most). Prints the plan's path and a one-line summary; run it
with weave start-work <name>.

Needs a model (model.provider, model.name). Pattern's tool calls are shown on
stderr.

Exit codes: 0 a plan was written and passes validation, 1 no model, the model
failed, no plan was written or it still fails validation, 2 usage.`,
		Example: `  weave plan new "add a /healthz endpoint with a test"
  weave plan new --name healthz "add a /healthz endpoint with a test"`,
		Args: argsBetween(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Request = strings.TrimSpace(args[0])
			if opts.Request == "" {
				return usageErrorf(`weave plan new needs a request: weave plan new "what the plan is for"`)
			}
			if opts.Name != "" && !planNameRE.MatchString(opts.Name) {
				return usageErrorf("--name %q: use lower-case letters, digits and dashes, e.g. oauth2-login", opts.Name)
			}
			return planNewRun(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Name, "name", "", "the plan's file name without .md (default: Pattern picks one)")
	return cmd
}

var planNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

func planNewRun(ctx context.Context, opts *planNewOptions) error {
	project, cfg, err := opts.projectWithModel("weave plan new")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(plans.PlansDir(project), 0o755); err != nil {
		return fmt.Errorf("create the plans directory: %w", err)
	}
	h, closeHost, err := openLoggedHost(ctx, project, cfg, host.WithTools())
	if err != nil {
		return err
	}
	defer closeHost()

	prompt := opts.Request
	if opts.Name != "" {
		prompt += fmt.Sprintf("\n\nWrite the plan to .weave/plans/%s.md.", opts.Name)
	}
	before := agents.PlanDigests(project)
	stop := h.ObserveModel(func(ev chat.Event) {
		if ev.Type == chat.ModelToolCall {
			fmt.Fprintf(opts.Streams.ErrOut, "[%s] → %s\n", ev.Agent, ev.Tool)
		}
	})
	resp, err := h.Ask(ctx, agents.Pattern, "plan-"+uuid.NewString()[:8], prompt)
	stop()
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
	}
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	written := agents.ChangedPlans(project, before)
	if len(written) == 0 {
		msg := "Pattern wrote no plan"
		if out := strings.TrimSpace(resp.Output); out != "" {
			msg += "; it answered:\n" + out
		}
		return &exitError{code: exitFailed, err: errors.New(msg)}
	}
	for _, path := range written {
		p, err := plans.Load(path)
		if err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("read the plan Pattern wrote: %w", err)}
		}
		rep := plans.Validate(project, p)
		if !rep.OK() || len(rep.Warnings) > 0 {
			return &exitError{code: exitFailed, err: fmt.Errorf("%s does not pass validation; run weave plan validate %s", relPath(project, path), p.Name)}
		}
		fmt.Fprintf(opts.Streams.Out, "%s: %s\n", relPath(project, path), agents.PlanLine(p))
	}
	return nil
}
