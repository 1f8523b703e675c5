package tools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/plugins"
)

// mcpRow is the MCP servers of a role's row: agents.<name>.mcp when set,
// else every server for a role that may change the project (write or edit
// in its row) and none for a read-only role (whose bash is read-only).
func mcpRow(row GateRow, configured []string) ([]string, bool) {
	if configured != nil {
		return slices.Clone(configured), true
	}
	if !readOnlyRow(row) {
		return []string{config.MCPAll}, false
	}
	return nil, false
}

// mcpConfig is what config says of r's MCP servers, nil when nothing:
// agents.<name>.mcp, custom_agents.<name>.mcp, and for a category's
// Shuttle, Shuttle's.
func mcpConfig(cfg *config.Config, r agents.Role, ac config.AgentConfig, ok bool) []string {
	if ok && ac.MCP != nil {
		return ac.MCP
	}
	if c, ok := cfg.CustomAgents[r.Name]; ok && c.MCP != nil {
		return c.MCP
	}
	if r.Category != "" {
		if sc, ok := cfg.Agents[agents.Shuttle]; ok && sc.MCP != nil {
			return sc.MCP
		}
	}
	return nil
}

func rowHasServer(row GateRow, server string) bool {
	return slices.Contains(row.MCP, config.MCPAll) || slices.Contains(row.MCP, server)
}

// MCPAllowed reports whether c may use the MCP server: every role along
// its chain has it in its row.
func (g *Gate) MCPAllowed(c Caller, server string) bool {
	chain := c.Path()
	if _, p := g.chainProblem(chain); p != "" {
		return false
	}
	for _, name := range chain {
		if !rowHasServer(g.rows[name], server) {
			return false
		}
	}
	return true
}

// mcpCeiling says why an MCP tool (or mcp_tool_search) is outside the
// chain's rows, or "".
func (g *Gate) mcpCeiling(chain []string, tool string) string {
	agent := chain[len(chain)-1]
	server, isTool := plugins.MCPServerOf(tool)
	for i := len(chain) - 1; i >= 0; i-- {
		row := g.rows[chain[i]]
		if isTool && rowHasServer(row, server) || !isTool && len(row.MCP) > 0 {
			continue
		}
		what := "MCP server " + server
		if !isTool {
			what = "MCP servers"
		}
		why := mcpWhy(row)
		if i == len(chain)-1 {
			return fmt.Sprintf("%s has no %s (%s)", agent, what, why)
		}
		return fmt.Sprintf("%s has no %s (%s), and %s works for %s (%s): a delegated agent never gets more than the agents above it",
			chain[i], what, why, agent, chain[i], strings.Join(chain, " > "))
	}
	return ""
}

func mcpWhy(row GateRow) string {
	name := row.Role.Name
	switch {
	case row.MCPFromConfig && len(row.MCP) == 0:
		return fmt.Sprintf("config agents.%s.mcp gives it none", name)
	case row.MCPFromConfig:
		return fmt.Sprintf("config agents.%s.mcp gives it only %s", name, strings.Join(row.MCP, ", "))
	}
	return fmt.Sprintf("%s is read-only; config agents.%s.mcp may give it servers", name, name)
}

// readOnlyRow: a row without write or edit (a read-only role's bash runs
// read-only in the sandbox).
func readOnlyRow(row GateRow) bool {
	return !slices.Contains(row.Tools, plugins.ToolWrite) && !slices.Contains(row.Tools, plugins.ToolEdit)
}
