package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host"
)

type reviewOptions struct {
	*globalOptions
	Streams *Streams
	// Plan names the plan; empty means the active one.
	Plan string
	// Since is the commit the work started from; empty means start_sha.
	Since string
	JSON  bool
	// Bus joins a bus instead of the embedded one.
	Bus string
}

func newCmdReview(g *globalOptions, s *Streams, runF func(context.Context, *reviewOptions) error) *cobra.Command {
	opts := &reviewOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "review",
		Short: "Have Weft and Warp review a plan's work: the diff since it started",
		Long: `Have Weft (reviewer) and Warp (security auditor) review the work of a plan,
in parallel, with the configured model: each gets the working tree's diff
since the plan's start_sha (in .weave/state.json; new files included) and
answers [APPROVE] or [REJECT] with its reasons. Each verdict is shown and kept
in the review's session transcript, .weave/sessions/<id>.jsonl.

Without --plan, reviews the active plan. A plan that completed has no work
state any more: name the commit its work started from with --since.
review.on_complete: true runs the same review when start-work finishes a plan.

Exit codes: 0 both approve, 1 a reviewer rejected, gave no verdict or could
not answer, 2 usage.`,
		Example: `  weave review                        # the active plan, since its start_sha
  weave review --plan oauth2-login
  weave review --plan oauth2-login --since main
  weave review --json | jq -r '.reviews[] | select(.verdict == "reject") | .reasons'`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return reviewRun(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Plan, "plan", "", "the plan whose work to review (default: the active plan)")
	cmd.Flags().StringVar(&opts.Since, "since", "", "review the change since this commit instead of the plan's start_sha")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the verdicts as JSON")
	cmd.Flags().StringVar(&opts.Bus, "bus", "", "join a bus: ws://HOST:PORT or nats://HOST:PORT (default: bus.url, WEAVE_BUS_URL, else the embedded bus)")
	_ = cmd.RegisterFlagCompletionFunc("plan", completePlanNames(g))
	return cmd
}

func reviewRun(ctx context.Context, opts *reviewOptions) error {
	project, cfg, err := opts.projectWithModel("a review")
	if err != nil {
		return err
	}
	h, closeHost, err := openLoggedHost(ctx, project, cfg, host.WithBus(opts.Bus), host.WithTools())
	if err != nil {
		return err
	}
	defer closeHost()
	started := func(plan, since string) {
		if !opts.JSON {
			fmt.Fprintf(opts.Streams.ErrOut, "reviewing plan %s since %s with %s…\n", plan, shortSHA(since), strings.Join(agents.Reviewers(), " and "))
		}
	}
	rep, err := h.Review(ctx, host.ReviewOptions{Plan: opts.Plan, Since: opts.Since, Started: started})
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Streams.Out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Plan       string          `json:"plan"`
			Since      string          `json:"since"`
			Session    string          `json:"session"`
			Transcript string          `json:"transcript"`
			Approved   bool            `json:"approved"`
			Reviews    []agents.Review `json:"reviews"`
		}{rep.Plan, rep.Since, rep.Session, rep.Transcript, len(rep.Rejected()) == 0, rep.Reviews})
	} else {
		printReviews(opts.Streams.Out, rep.Reviews)
		fmt.Fprintf(opts.Streams.ErrOut, "verdicts kept in %s\n", rep.Transcript)
	}
	if bad := rep.Rejected(); len(bad) > 0 {
		return &exitError{code: exitFailed, err: rejection(rep.Plan, rep.Since, bad)}
	}
	return nil
}

// printReviews shows each verdict with its reasons, indented.
func printReviews(w io.Writer, reviews []agents.Review) {
	for _, rv := range reviews {
		fmt.Fprintln(w, rv.Summary())
		body := rv.Reasons
		if rv.Error == "" && rv.Verdict != agents.VerdictNone {
			// The summary showed the first line already.
			if _, rest, ok := strings.Cut(strings.TrimSpace(body), "\n"); ok {
				body = rest
			} else {
				body = ""
			}
		} else if rv.Error != "" {
			body = ""
		}
		for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			if strings.TrimSpace(l) != "" {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
}

// rejection is the error a run or a review ends with when not every
// reviewer approved: who, and why, in a line each.
func rejection(plan, since string, bad []agents.Review) error {
	var b strings.Builder
	fmt.Fprintf(&b, "review of plan %s not approved:", plan)
	for _, rv := range bad {
		b.WriteString("\n  " + rv.Summary())
	}
	fmt.Fprintf(&b, "\nfix what they found, then run `%s` again", reviewCommand(plan, since))
	return errors.New(b.String())
}

// reviewCommand is the command that reviews plan's work since since.
func reviewCommand(plan, since string) string {
	cmd := "weave review --plan " + plan
	if since != "" {
		cmd += " --since " + shortSHA(since)
	}
	return cmd
}

func shortSHA(sha string) string {
	if len(sha) > 12 && strings.Trim(sha, "0123456789abcdef") == "" {
		return sha[:12]
	}
	return sha
}
