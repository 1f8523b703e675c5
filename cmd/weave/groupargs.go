package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// refuseUnknownSubcommands makes every command that only groups others
// (plan, config, hooks, completion...) refuse an argument it does not know.
// cobra prints such a command's help and exits 0, so `weave plan valdiate x`
// in a CI step would pass without validating anything; here it is a usage
// error with gh's did-you-mean.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() || c == c.Root() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2 // cobra's own default, set only on its root path
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", quoteAll(s))
		}
		return usageErrorf("%s\nrun `%s --help` for its commands", msg, c.CommandPath())
	}
}

// quoteAll renders names as "a", "b" or "c".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// plainFlagUsages keeps pflag from reading a `quoted command` in a flag's
// help as the flag's value name ("--bus weave bus serve"): backticks in
// flag help become plain quotes, on every command, including flags added
// later.
func plainFlagUsages(c *cobra.Command) {
	fix := func(f *pflag.Flag) {
		if strings.Contains(f.Usage, "`") {
			f.Usage = strings.ReplaceAll(f.Usage, "`", "'")
		}
	}
	c.LocalFlags().VisitAll(fix)
	c.PersistentFlags().VisitAll(fix)
	c.Flags().VisitAll(fix)
	for _, sub := range c.Commands() {
		plainFlagUsages(sub)
	}
}
