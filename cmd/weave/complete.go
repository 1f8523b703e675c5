package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/plans"
)

// completePlanNames completes the first argument with the names of the
// project's plans.
func completePlanNames(g *globalOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		project, err := g.project()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		all, err := plans.Discover(project)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, p := range all {
			if strings.HasPrefix(p.Name, prefix) {
				names = append(names, p.Name+"\t"+p.Title)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
