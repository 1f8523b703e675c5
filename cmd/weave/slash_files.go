package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/instructions"
)

// fileCommands are the project's and the user's command files
// (.weave/commands, .claude/commands and the user's), less those whose
// name is a built-in slash command's: a file never shadows one, and the
// person is warned.
func fileCommands(project string, cfg *config.Config, builtins []slashCommand) ([]instructions.Command, []string) {
	cmds, warnings := host.Sources(project, cfg).Commands()
	cmds = slices.DeleteFunc(cmds, func(c instructions.Command) bool {
		if !slices.ContainsFunc(builtins, func(b slashCommand) bool { return b.name == c.Name }) {
			return false
		}
		warnings = append(warnings, fmt.Sprintf("command %s not used: /%s is a built-in command", c.Shown, c.Name))
		return true
	})
	return cmds, warnings
}

// fileCommandPrompt turns a prompt that calls a command file ("/name
// args") into the command's prompt; ok is false for any other prompt.
func fileCommandPrompt(cmds []instructions.Command, prompt string) (instructions.Command, string, bool, error) {
	name, args, isCall := instructions.ParseCall(prompt)
	if !isCall {
		return instructions.Command{}, "", false, nil
	}
	cmd, found, err := instructions.Resolve(cmds, name)
	if err != nil || !found {
		return instructions.Command{}, "", false, err
	}
	return cmd, cmd.Expand(args), true, nil
}

// withFileCommand runs ask under what cmd's front matter says of the
// turn: allowed-tools narrows the session's tools, model picks the model.
func withFileCommand(ctx context.Context, h *host.Host, session string, cmd instructions.Command, ask func(context.Context) error) error {
	if cmd.AllowedTools != nil {
		defer h.Narrow(session, "/"+cmd.Name, cmd.AllowedTools)()
	}
	if cmd.Model != "" {
		defer h.UseModel(session, cmd.Model)()
	}
	return ask(ctx)
}

// fileCommandUsage is how /help shows a command file.
func fileCommandUsage(c instructions.Command) (usage, help string) {
	usage = "/" + c.Name
	if c.ArgumentHint != "" {
		usage += " " + c.ArgumentHint
	}
	help = c.Description
	if help == "" {
		help = "(no description)"
	}
	return usage, help + " (" + c.Namespace + ")"
}
