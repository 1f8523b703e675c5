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
			t, err := chat.SessionTokens(c.project, []string{c.session})
			if err != nil {
				return err
			}
			writeStatus(c.streams, st, activePlanTokens(c.project, st))
			fmt.Fprintf(c.streams.Out, "session %s: %s\n", c.session, tokenLine(t))
			return nil
		}}
}
