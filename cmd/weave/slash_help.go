package main

import (
	"context"
	"fmt"
	"text/tabwriter"
)

func helpSlash() slashCommand {
	return slashCommand{name: "help", help: "list the commands",
		run: func(_ context.Context, c *chatREPL, _ string) error {
			w := tabwriter.NewWriter(c.streams.Out, 0, 0, 2, ' ', 0)
			for _, cmd := range c.commands {
				usage := "/" + cmd.name
				if cmd.args != "" {
					usage += " " + cmd.args
				}
				fmt.Fprintf(w, "%s\t%s\n", usage, cmd.help)
			}
			for _, f := range c.files {
				usage, help := fileCommandUsage(f)
				fmt.Fprintf(w, "%s\t%s\n", usage, help)
			}
			fmt.Fprintln(w, "Ctrl-C\tinterrupt the answer; again, or at the prompt, to leave")
			fmt.Fprintln(w, "Ctrl-D\tleave")
			return w.Flush()
		}}
}
