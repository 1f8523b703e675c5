package main

import (
	"context"
	"fmt"
)

func compactSlash() slashCommand {
	return slashCommand{name: "compact", help: "summarise the conversation so far, to free the context window",
		run: func(ctx context.Context, c *chatREPL, _ string) error {
			if err := c.h.Compact(ctx, c.session, c.agent); err != nil {
				return err
			}
			// The compaction's own line (sizes before and after) is shown
			// by the transcript as it happens.
			fmt.Fprintln(c.streams.ErrOut, "the next answer continues from the summary")
			return nil
		}}
}
