package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/plans"
)

func newCmdPlan(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "List, show, validate and write the plans in .weave/plans",
		Example: `  weave plan list
  weave plan show hello-weave
  weave plan validate hello-weave
  weave plan new "add a /healthz endpoint with a test"`,
	}
	cmd.AddCommand(newCmdPlanList(g, s), newCmdPlanShow(g, s), newCmdPlanValidate(g, s), newCmdPlanNew(g, s))
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
		Example: `  weave plan list
  weave plan list --json | jq -r '.[] | select(.complete | not) | .name'`,
		Args: argsBetween(0, 0),
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

// planView is what `plan show --json` prints.
type planView struct {
	Name      string     `json:"name"`
	Title     string     `json:"title,omitempty"`
	Path      string     `json:"path"`
	Effort    string     `json:"effort,omitempty"`
	Completed int        `json:"completed"`
	Total     int        `json:"total"`
	Tasks     []taskView `json:"tasks"`
}

type taskView struct {
	Number     int    `json:"number,omitempty"`
	Title      string `json:"title"`
	Done       bool   `json:"done"`
	Line       int    `json:"line"`
	Category   string `json:"category,omitempty"`
	What       string `json:"what,omitempty"`
	Files      string `json:"files,omitempty"`
	Acceptance string `json:"acceptance,omitempty"`
	// NeedsModel marks a task without sh/bash blocks: only an agent model
	// can carry it out.
	NeedsModel bool        `json:"needs_model"`
	Blocks     []blockView `json:"blocks"`
}

type blockView struct {
	Info   string `json:"info"`
	Kind   string `json:"kind"` // runs, verify or other
	Line   int    `json:"line"`
	Lines  int    `json:"lines"`
	Script string `json:"code"`
}

func viewOfPlan(project string, p *plans.Plan) planView {
	pr := p.Progress()
	v := planView{Name: p.Name, Title: p.Title, Path: relPath(project, p.Path), Effort: p.Effort, Completed: pr.Completed, Total: pr.Total, Tasks: []taskView{}}
	for _, t := range p.Tasks {
		tv := taskView{Number: t.Number, Title: t.Title, Done: t.Done, Line: t.Line, Category: t.Category,
			What: strings.TrimSpace(t.What), Files: strings.TrimSpace(t.Files), Acceptance: strings.TrimSpace(t.Acceptance),
			NeedsModel: !t.IsRunbook(), Blocks: []blockView{}}
		for _, b := range t.Blocks {
			kind := "other"
			switch {
			case b.IsShell() && b.IsVerify():
				kind = "verify"
			case b.IsShell():
				kind = "runs"
			}
			tv.Blocks = append(tv.Blocks, blockView{Info: b.Info, Kind: kind, Line: b.Line,
				Lines: strings.Count(strings.TrimRight(b.Code, "\n"), "\n") + 1, Script: b.Code})
		}
		v.Tasks = append(v.Tasks, tv)
	}
	return v
}

func newCmdPlanShow(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a plan's tasks, their fields and blocks",
		Long: `Show a plan's tasks with their fields and blocks. A task without sh or bash
blocks is marked "needs a model": only an agent model can carry it out.`,
		Example: `  weave plan show hello-weave
  weave plan show hello-weave --json | jq '.tasks[] | select(.needs_model) | .number'`,
		Args:              argsBetween(1, 1),
		ValidArgsFunction: completePlanNames(g),
		RunE: func(c *cobra.Command, args []string) error {
			project, p, err := g.findPlan(args[0])
			if err != nil {
				return err
			}
			v := viewOfPlan(project, p)
			if asJSON {
				return writeJSON(s.Out, v)
			}
			writePlan(s.Out, v, s.Terminal)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

// writePlan prints a plan for people; the progress bar only on a terminal.
func writePlan(w io.Writer, v planView, terminal bool) {
	title := v.Title
	if title == "" {
		title = v.Name
	}
	fmt.Fprintf(w, "%s\n%s\n", title, strings.Repeat("=", cellWidth(title)))
	fmt.Fprintf(w, "file:     %s\n", v.Path)
	if terminal {
		fmt.Fprintf(w, "progress: %d/%d %s\n", v.Completed, v.Total, bar(v.Completed, v.Total))
	} else {
		fmt.Fprintf(w, "progress: %d/%d\n", v.Completed, v.Total)
	}
	if v.Effort != "" {
		fmt.Fprintf(w, "effort:   %s\n", v.Effort)
	}
	for _, t := range v.Tasks {
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
		fmt.Fprintf(w, "  (line %d)", t.Line)
		if t.NeedsModel && !t.Done {
			fmt.Fprint(w, "  needs a model")
		}
		fmt.Fprintln(w)
		for _, f := range []struct{ k, v string }{{"What", t.What}, {"Files", t.Files}, {"Acceptance", t.Acceptance}} {
			if f.v != "" {
				fmt.Fprintf(w, "    %s: %s\n", f.k, indentRest(f.v, "      "))
			}
		}
		for _, b := range t.Blocks {
			kind := b.Kind
			if kind == "other" {
				kind = "block"
			}
			fmt.Fprintf(w, "    %s ```%s``` (%d lines)\n", kind, b.Info, b.Lines)
		}
	}
}

// problemView is one finding of `plan validate --json`.
type problemView struct {
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// validationView is what `plan validate --json` prints.
type validationView struct {
	Plan     string        `json:"plan"`
	Path     string        `json:"path"`
	Valid    bool          `json:"valid"`
	Errors   []problemView `json:"errors"`
	Warnings []problemView `json:"warnings"`
	// NeedsModel lists the numbers (or positions) of unchecked tasks
	// without sh/bash blocks.
	NeedsModel []int `json:"needs_model"`
}

func problemViews(ps []plans.Problem) []problemView {
	out := make([]problemView, 0, len(ps))
	for _, p := range ps {
		out = append(out, problemView{Line: p.Line, Message: p.Msg})
	}
	return out
}

// modelTasks lists the unchecked tasks of p that need an agent model.
func modelTasks(p *plans.Plan) []int {
	out := []int{}
	for _, t := range p.Tasks {
		if !t.Done && !t.IsRunbook() {
			out = append(out, t.Ordinal())
		}
	}
	return out
}

func newCmdPlanValidate(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate NAME",
		Short: "Check a plan; exits 1 when it has errors",
		Long: `Check a plan: errors (no tasks, duplicate task numbers, a path outside
.weave/plans/, a dependency on a task the plan does not have, on itself or in
a cycle) block a start; warnings are shown. Unchecked tasks without sh or
bash blocks are listed as needing a model.

Exit codes: 0 valid (warnings allowed), 1 errors, 2 usage.`,
		Example: `  weave plan validate hello-weave
  weave plan validate hello-weave --json | jq .warnings`,
		Args:              argsBetween(1, 1),
		ValidArgsFunction: completePlanNames(g),
		RunE: func(c *cobra.Command, args []string) error {
			project, p, err := g.findPlan(args[0])
			if err != nil {
				return err
			}
			rep := plans.Validate(project, p)
			needs := modelTasks(p)
			fail := func() error {
				return &exitError{code: exitFailed, err: fmt.Errorf("plan %q has %d error(s) and %d warning(s)", p.Name, len(rep.Errors), len(rep.Warnings))}
			}
			if asJSON {
				if err := writeJSON(s.Out, validationView{Plan: p.Name, Path: relPath(project, p.Path), Valid: rep.OK(),
					Errors: problemViews(rep.Errors), Warnings: problemViews(rep.Warnings), NeedsModel: needs}); err != nil {
					return err
				}
				if !rep.OK() {
					return &exitError{code: exitFailed}
				}
				return nil
			}
			printReport(s.Out, p, rep)
			if len(needs) > 0 {
				fmt.Fprintf(s.Out, "%s: note: %s need(s) a model (no sh/bash blocks)\n", problemPos(p, plans.Problem{}), taskList(needs))
			}
			if !rep.OK() {
				return fail()
			}
			fmt.Fprintf(s.Out, "plan %q is valid (%d warning(s))\n", p.Name, len(rep.Warnings))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return cmd
}

// taskList is "task 3" or "tasks 3, 5".
func taskList(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	if len(ns) == 1 {
		return "task " + parts[0]
	}
	return "tasks " + strings.Join(parts, ", ")
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
