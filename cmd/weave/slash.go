package main

import "context"

// slashCommand is one of weave chat's slash commands, each in a file of
// its own (slash_<name>.go) and listed once in slashCommands.
type slashCommand struct {
	// name is the command without its slash.
	name string
	// args shows its argument ("" for none), help what it does.
	args, help string
	run        func(ctx context.Context, c *chatREPL, arg string) error
}

// slashCommands are the chat's commands, in the order /help lists them.
func slashCommands() []slashCommand {
	return []slashCommand{
		startWorkSlash(),
		planSlash(),
		statusSlash(),
		agentsSlash(),
		compactSlash(),
		helpSlash(),
		exitSlash(),
	}
}
