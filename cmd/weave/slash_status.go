package main

import (
	"context"
	"fmt"
	"time"

	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/run"
)

func statusSlash() slashCommand {
	return slashCommand{name: "status", help: "show the plans' progress and this session's tokens",
		run: func(ctx context.Context, c *chatREPL, _ string) error {
			st, err := run.ReadStatus(ctx, c.project, time.Now())
			if err != nil {
				return err
			}
			t, cost, err := chat.SessionUse(c.project, []string{c.session})
			if err != nil {
				return err
			}
			tokens, _ := activePlanUse(c.project, st)
			writeStatus(c.streams, st, tokens)
			fmt.Fprintf(c.streams.Out, "session %s: %s, cost %s\n", c.session, tokenLine(t), cost)
			return nil
		}}
}
