package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/plans"
)

func newCmdPlan(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "List, show and validate the plans in .weave/plans",
	}
	cmd.AddCommand(newCmdPlanList(g, s), newCmdPlanShow(g, s), newCmdPlanValidate(g, s))
	return cmd
}

type planEntry struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	Completed int    `json:"completed"`
	Total     int    `json:"total"`
	Complete  bool   `json:"complete"`
	// Invalid says why the plan cannot run, "" when it can.
	Invalid string `json:"invalid,omitempty"`
}

func newCmdPlanList(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the plans, newest first, with their progress",
		Args:  argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			project, err := g.project()
			if err != nil {
				return err
			}
			all, err := plans.Summaries(c.Context(), project)
			if err != nil {
				return err
			}
			entries := make([]planEntry, 0, len(all))
			for _, p := range all {
				pr := p.Progress
				entries = append(entries, planEntry{Name: p.Name, Path: p.Path, Completed: pr.Completed, Total: pr.Total, Complete: pr.Complete(), Invalid: p.Invalid})
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(entries)
			}
			if len(entries) == 0 {
				fmt.Fprintln(s.Out, "no plans in .weave/plans")
				return nil
			}
			for _, e := range entries {
				done := ""
				switch {
				case e.Invalid != "":
					done = "  invalid: " + e.Invalid
				case e.Complete:
					done = "  complete"
				}
				fmt.Fprintf(s.Out, "%-30s %d/%d%s\n", e.Name, e.Completed, e.Total, done)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func newCmdPlanShow(g *globalOptions, s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a plan's tasks, their fields and blocks",
		Args:  argsBetween(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			project, p, err := g.findPlan(args[0])
			if err != nil {
				return err
			}
			w := s.Out
			pr := p.Progress()
			title := p.Title
			if title == "" {
				title = p.Name
			}
			fmt.Fprintf(w, "%s\n%s\n", title, strings.Repeat("=", len([]rune(title))))
			fmt.Fprintf(w, "file:     %s\n", relPath(project, p.Path))
			fmt.Fprintf(w, "progress: %d/%d %s\n", pr.Completed, pr.Total, bar(pr.Completed, pr.Total, 20))
			if p.Effort != "" {
				fmt.Fprintf(w, "effort:   %s\n", p.Effort)
			}
			for _, t := range p.Tasks {
				box := "[ ]"
				if t.Done {
					box = "[x]"
				}
				num := ""
				if t.Number > 0 {
					num = fmt.Sprintf("%d. ", t.Number)
				}
				fmt.Fprintf(w, "\n%s %s%s", box, num, t.Title)
				if t.Category != "" {
					fmt.Fprintf(w, "  [category: %s]", t.Category)
				}
				fmt.Fprintf(w, "  (line %d)\n", t.Line)
				for _, f := range []struct{ k, v string }{{"What", t.What}, {"Files", t.Files}, {"Acceptance", t.Acceptance}} {
					if f.v != "" {
						fmt.Fprintf(w, "    %s: %s\n", f.k, indentRest(f.v, "      "))
					}
				}
				for _, b := range t.Blocks {
					kind := "block"
					switch {
					case b.IsShell() && b.IsVerify():
						kind = "verify"
					case b.IsShell():
						kind = "runs"
					}
					fmt.Fprintf(w, "    %s ```%s``` (%d lines)\n", kind, b.Info, strings.Count(strings.TrimRight(b.Code, "\n"), "\n")+1)
				}
			}
			return nil
		},
	}
}

func newCmdPlanValidate(g *globalOptions, s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "validate NAME",
		Short: "Check a plan; exits 1 when it has errors",
		Args:  argsBetween(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			project, p, err := g.findPlan(args[0])
			if err != nil {
				return err
			}
			rep := plans.Validate(project, p)
			printReport(s.Out, p, rep)
			if !rep.OK() {
				return &exitError{code: exitFailed, err: fmt.Errorf("plan %q has %d error(s) and %d warning(s)", p.Name, len(rep.Errors), len(rep.Warnings))}
			}
			fmt.Fprintf(s.Out, "plan %q is valid (%d warning(s))\n", p.Name, len(rep.Warnings))
			return nil
		},
	}
}

func relPath(base, path string) string {
	if rel, err := filepath.Rel(base, path); err == nil {
		return rel
	}
	return path
}

func indentRest(s, indent string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+indent)
}
