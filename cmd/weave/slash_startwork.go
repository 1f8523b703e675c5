package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/weavehq/weave/host/run"
)

func startWorkSlash() slashCommand {
	return slashCommand{name: "start-work", args: "[plan]", help: "hand the session to Tapestry to run a plan (as weave start-work: without a name, resume or the only incomplete plan)",
		run: func(ctx context.Context, c *chatREPL, arg string) error {
			view := &plainView{out: c.streams.Out, errOut: c.streams.ErrOut}
			res, err := c.h.StartWorkIn(ctx, c.session, arg, func(ev run.Event) {
				// The chat's transcript shows the model's text and tool
				// calls already.
				if ev.Type != run.EventModelDelta && ev.Type != run.EventModelToolCall {
					view.Observe(ev)
				}
			})
			if err != nil {
				return err
			}
			return chatRunOutcome(c, res)
		}}
}

// chatRunOutcome says how a run started from the chat ended, in the
// chat's words: what to type next.
func chatRunOutcome(c *chatREPL, res run.Result) error {
	switch res.Status {
	case run.StatusDone:
		return nil
	case run.StatusComplete:
		fmt.Fprintln(c.streams.Out, res.Resolution.Message())
		return nil
	case run.StatusPaused:
		fmt.Fprintln(c.streams.ErrOut, "paused: /start-work resumes at the first unchecked task")
		return nil
	case run.StatusFailed:
		hint := ""
		if res.Plan != nil {
			hint = fmt.Sprintf("; fix the cause, then /start-work %s retries it (logs in .weave/logs/%s/)", res.Plan.Name, res.Plan.Name)
		}
		return fmt.Errorf("%v%s", res.Err, hint)
	case run.StatusInvalid:
		printReport(c.streams.ErrOut, res.Plan, res.Report)
		return fmt.Errorf("plan %q has %d error(s); fix them and /start-work again", res.Plan.Name, len(res.Report.Errors))
	case run.StatusBlocked:
		return res.Err
	}
	// Not found, none, or a choice to make.
	return errors.New(res.Resolution.Message())
}
