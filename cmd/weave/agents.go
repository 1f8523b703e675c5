package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/tools"
)

func newCmdAgents(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Show the agent roles and what each may do",
		Example: `  weave agents list
  weave agents list --json | jq '.agents[] | select(.mode == "subagent") | .name'`,
	}
	cmd.AddCommand(newCmdAgentsList(g, s))
	return cmd
}

// Cell values of the matrix in --json.
const (
	cellAllowed = "allowed"
	cellDenied  = "denied"
	cellScoped  = "scoped"
)

// agentsList is what `weave agents list --json` prints.
type agentsList struct {
	// Tools are the matrix's columns, in order.
	Tools    []string     `json:"tools"`
	MaxDepth int          `json:"max_depth"`
	Agents   []agentEntry `json:"agents"`
}

type agentEntry struct {
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Mode        string   `json:"mode"`
	Temperature float64  `json:"temperature"`
	Model       string   `json:"model,omitempty"`
	Delegates   []string `json:"delegates"`
	// Matrix maps each tool to allowed, denied or scoped (allowed within
	// WriteScope only).
	Matrix     map[string]string `json:"matrix"`
	WriteScope string            `json:"write_scope,omitempty"`
	// Narrowed and Widened are the row's changes by config.
	Narrowed []string `json:"narrowed,omitempty"`
	Widened  []string `json:"widened,omitempty"`
	// Category is the category a Shuttle serves (categories.<name>);
	// Custom marks an agent of custom_agents.
	Category string `json:"category,omitempty"`
	Custom   bool   `json:"custom,omitempty"`
}

func newCmdAgentsList(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Print the capability matrix: each agent's mode, temperature, tools and delegates",
		Example: `  weave agents list
  weave agents list --json`,
		Long: `Print the capability matrix as the host's tool gate enforces it: for each agent
its mode, temperature, whom it may delegate to, and for each tool whether it is
allowed (v), denied (x) or limited to .md files under .weave/ (.md*). Rows that
the configuration narrowed (agents.<name>.tools) or widened (allow_widen: true)
are marked and explained below the table.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			project, cfg, _, err := g.optionalProjectConfig()
			if err != nil {
				return err
			}
			// Widening is shown in the table; no log line is needed here.
			h, err := host.Open(c.Context(), project, cfg)
			if err != nil {
				return err
			}
			defer h.Close(context.WithoutCancel(c.Context()))
			list := buildAgentsList(cfg, h.Gate())
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			return writeAgentsTable(s.Out, list)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the matrix as JSON")
	return cmd
}

func buildAgentsList(cfg *config.Config, gate *tools.Gate) agentsList {
	list := agentsList{Tools: agents.ToolNames(), MaxDepth: gate.MaxDepth()}
	for _, row := range gate.Rows() {
		r := row.Role
		e := agentEntry{Name: r.Name, Title: r.Title, Mode: string(r.Mode), Temperature: r.Temperature,
			Model: cmp.Or(r.Model, cfg.Model.Name), Delegates: r.Delegates, Matrix: map[string]string{},
			Narrowed: row.Narrowed, Widened: row.Widened, Category: r.Category, Custom: r.Custom}
		if e.Delegates == nil {
			e.Delegates = []string{}
		}
		if ac, ok := cfg.Agents[r.Name]; ok {
			if ac.Temperature != nil {
				e.Temperature = *ac.Temperature
			}
			if ac.Model != "" {
				e.Model = ac.Model
			}
		}
		if !r.WriteScope.IsZero() {
			e.WriteScope = r.WriteScope.String()
		}
		for _, t := range list.Tools {
			cell := cellDenied
			if slices.Contains(row.Tools, t) {
				cell = cellAllowed
				if !r.WriteScope.IsZero() && slices.Contains(agents.ScopedTools(), t) {
					cell = cellScoped
				}
			}
			e.Matrix[t] = cell
		}
		list.Agents = append(list.Agents, e)
	}
	return list
}

func writeAgentsTable(out io.Writer, list agentsList) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := []string{"AGENT", "MODE", "TEMP"}
	head = append(head, list.Tools...)
	head = append(head, "DELEGATES")
	fmt.Fprintln(w, strings.Join(head, "\t"))
	var notes []string
	for _, e := range list.Agents {
		cols := []string{e.Name, e.Mode, strconv.FormatFloat(e.Temperature, 'f', -1, 64)}
		for _, t := range list.Tools {
			cell := map[string]string{cellAllowed: "v", cellDenied: "x", cellScoped: ".md*"}[e.Matrix[t]]
			switch {
			case slices.Contains(e.Widened, t):
				cell += "+"
			case slices.Contains(e.Narrowed, t):
				cell += "-"
			}
			cols = append(cols, cell)
		}
		delegates := "-"
		if len(e.Delegates) > 0 {
			delegates = strings.Join(e.Delegates, ",")
		}
		cols = append(cols, delegates)
		fmt.Fprintln(w, strings.Join(cols, "\t"))
		if len(e.Narrowed) > 0 {
			notes = append(notes, fmt.Sprintf("%s: narrowed by config (agents.%s.tools): without %s", e.Name, e.Name, strings.Join(e.Narrowed, ", ")))
		}
		if e.Matrix["task"] == cellAllowed && len(e.Delegates) == 0 {
			notes = append(notes, fmt.Sprintf("%s: has task in its row but nobody to delegate to", e.Name))
		}
		switch {
		case e.Category != "":
			notes = append(notes, fmt.Sprintf("%s: runs the plan tasks tagged [category: %s] (categories.%s)", e.Name, e.Category, e.Category))
		case e.Custom:
			notes = append(notes, fmt.Sprintf("%s: custom agent (custom_agents.%s)", e.Name, e.Name))
		}
		if len(e.Widened) > 0 {
			notes = append(notes, fmt.Sprintf("%s: WIDENED by config (agents.%s.allow_widen): added %s", e.Name, e.Name, strings.Join(e.Widened, ", ")))
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "v allowed   x denied   .md* only .md files under .weave/ (checked on the real path)")
	fmt.Fprintln(out, "+ widened by config   - removed by config")
	fmt.Fprintf(out, "A delegated agent gets at most the tools of every agent above it; delegation nests at most %d deep (delegation.max_depth).\n", list.MaxDepth)
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
	return nil
}
