package main

import "context"

func agentsSlash() slashCommand {
	return slashCommand{name: "agents", help: "show the agents and the tools each may use",
		run: func(_ context.Context, c *chatREPL, _ string) error {
			return writeAgentsTable(c.streams.Out, buildAgentsList(c.cfg, c.h.Gate()))
		}}
}
