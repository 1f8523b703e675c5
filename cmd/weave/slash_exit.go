package main

import "context"

func exitSlash() slashCommand {
	return slashCommand{name: "exit", help: "end the chat (the session is saved)",
		run: func(_ context.Context, c *chatREPL, _ string) error {
			c.done = true
			return nil
		}}
}
