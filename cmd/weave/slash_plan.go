package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/weavehq/weave/agents"
)

func planSlash() slashCommand {
	return slashCommand{name: "plan", args: "<request>", help: "have Loom ask Pattern to write a plan for the request in .weave/plans/",
		run: func(ctx context.Context, c *chatREPL, arg string) error {
			if arg == "" {
				return errors.New("usage: /plan <what the plan is for>")
			}
			return c.ask(ctx, agents.Loom, fmt.Sprintf(planPrompt, arg))
		}}
}

// planPrompt routes a /plan request through Loom to Pattern.
const planPrompt = `The person asked for a plan with /plan. Delegate it to Pattern with the task tool (agent "pattern"): Pattern writes the plan as a markdown checklist in .weave/plans/. Do not write the plan yourself. When Pattern reports back, tell the person the plan's name and that /start-work <name> runs it.

The request:
%s`
