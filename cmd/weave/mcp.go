package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/mcp"
	"github.com/weavehq/weave/internal/proc"
)

func newCmdMCP(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "List and test the MCP servers of this project",
		Example: `  weave mcp list
  weave mcp test github`,
	}
	cmd.AddCommand(newCmdMCPList(g, s), newCmdMCPTest(g, s))
	return cmd
}

func newCmdMCPList(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Start every MCP server of config and .mcp.json and list its state and tools",
		Example: `  weave mcp list
  weave mcp list --json`,
		Long: `Start every MCP server of config ` + "`mcp_servers:`" + ` and of the project's .mcp.json,
list its tools as the agents see them (mcp__<server>__<tool>), and stop it.
STATE is ready, or failed with the reason. The command exits 0 either way.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			list, err := mcpStatus(c.Context(), g, s, "")
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(s.Out, "No MCP servers: add them under mcp_servers: in .weave/config.yaml, or in .mcp.json.")
				return nil
			}
			writeMCPList(s.Out, list)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func newCmdMCPTest(g *globalOptions, s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:     "test SERVER",
		Short:   "Connect to one MCP server and list its tools",
		Example: `  weave mcp test github`,
		Args:    argsBetween(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			list, err := mcpStatus(c.Context(), g, s, args[0])
			if err != nil {
				return err
			}
			st := list[0]
			if st.State != mcp.StateReady {
				return &exitError{code: exitFailed, err: fmt.Errorf("MCP server %s (%s, from %s) did not start: %s", st.Name, st.Type, st.Source, st.Error)}
			}
			fmt.Fprintf(s.Out, "%s: connected (%s, from %s), %d tools\n", st.Name, st.Type, st.Source, st.ToolCount)
			for _, t := range st.Tools {
				fmt.Fprintf(s.Out, "  %s\n", t)
			}
			return nil
		},
	}
}

// mcpStatus starts the project's MCP servers (only the one called only,
// when given), reports them and stops them.
func mcpStatus(ctx context.Context, g *globalOptions, s *Streams, only string) ([]mcp.Status, error) {
	project, cfg, _, err := g.optionalProjectConfig()
	if err != nil {
		return nil, err
	}
	specs, err := mcp.Specs(project, cfg)
	if err != nil {
		return nil, err
	}
	if only != "" {
		i := slices.IndexFunc(specs, func(sp mcp.Spec) bool { return sp.Name == only })
		if i < 0 {
			names := make([]string, len(specs))
			for j, sp := range specs {
				names[j] = sp.Name
			}
			have := "there are none; add them under mcp_servers: in .weave/config.yaml, or in .mcp.json"
			if len(names) > 0 {
				have = "the servers are " + strings.Join(names, ", ")
			}
			return nil, usageErrorf("no MCP server named %q: %s", only, have)
		}
		specs = specs[i : i+1]
	}
	o := host.MCPOptions(project, cfg, nil)
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	procs := proc.NewSet(proc.DefaultGrace, nil)
	o.Procs = procs
	m := mcp.New(specs, o)
	defer func() {
		_ = m.Close(context.WithoutCancel(ctx))
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = procs.Close(cctx)
	}()
	m.Start(ctx)
	return m.Status(), nil
}

func writeMCPList(w io.Writer, list []mcp.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTYPE\tSOURCE\tSTATE\tTOOLS")
	for _, st := range list {
		tools := strings.Join(st.Tools, ", ")
		if st.State != mcp.StateReady {
			tools = st.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d: %s\n", st.Name, st.Type, st.Source, st.State, st.ToolCount, tools)
	}
	_ = tw.Flush()
}
