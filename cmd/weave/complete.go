package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/plans"
)

// completion is one shell completion: a value and what it is.
type completion struct{ value, about string }

// completeFirstArg completes a command's first argument with the items
// list gives for the project, keeping those that start with what was
// typed. A project that cannot be read completes nothing.
func completeFirstArg(g *globalOptions, dir cobra.ShellCompDirective,
	list func(c *cobra.Command, project string) ([]completion, error)) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	dir |= cobra.ShellCompDirectiveNoFileComp
	return func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, dir
		}
		project, err := g.project()
		if err != nil {
			return nil, dir
		}
		items, err := list(c, project)
		if err != nil {
			return nil, dir
		}
		var out []string
		for _, it := range items {
			if strings.HasPrefix(it.value, prefix) {
				out = append(out, it.value+"\t"+it.about)
			}
		}
		return out, dir
	}
}

// completePlanNames completes the first argument with the names of the
// project's plans.
func completePlanNames(g *globalOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return completeFirstArg(g, 0, func(_ *cobra.Command, project string) ([]completion, error) {
		all, err := plans.Discover(project)
		var out []completion
		for _, p := range all {
			out = append(out, completion{p.Name, p.Title})
		}
		return out, err
	})
}

// completeHookNames completes the first argument with the project's hook
// names.
func completeHookNames(g *globalOptions, s *Streams) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return completeFirstArg(g, 0, func(c *cobra.Command, _ string) ([]completion, error) {
		quiet := *s
		quiet.ErrOut = io.Discard
		h, err := projectHooks(c.Context(), g, &quiet)
		if err != nil {
			return nil, err
		}
		defer h.Close(context.WithoutCancel(c.Context()))
		regs, _ := h.Hooks()
		var out []completion
		for _, r := range regs {
			out = append(out, completion{r.Info.Name, r.Source})
		}
		return out, nil
	})
}

// completeSessionIDs completes a session id with the project's sessions,
// the most recently active first.
func completeSessionIDs(g *globalOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return completeFirstArg(g, cobra.ShellCompDirectiveKeepOrder, func(_ *cobra.Command, project string) ([]completion, error) {
		list, err := chat.Sessions(project)
		var out []completion
		for _, s := range list {
			out = append(out, completion{s.ID, s.Agent})
		}
		return out, err
	})
}
