package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host"
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

// completeHookNames completes the first argument with the project's hook
// names.
func completeHookNames(g *globalOptions, s *Streams) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		quiet := *s
		quiet.ErrOut = io.Discard
		h, err := projectHooks(c.Context(), g, &quiet)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer h.Close(context.WithoutCancel(c.Context()))
		regs, _ := h.Hooks()
		var names []string
		for _, r := range regs {
			if strings.HasPrefix(r.Info.Name, prefix) {
				names = append(names, r.Info.Name+"\t"+r.Source)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeSessionIDs completes a session id with the project's sessions,
// the most recently active first.
func completeSessionIDs(g *globalOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		project, err := g.project()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := host.Sessions(project)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []string
		for _, s := range list {
			if strings.HasPrefix(s.ID, prefix) {
				ids = append(ids, s.ID+"\t"+s.Agent)
			}
		}
		return ids, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}
