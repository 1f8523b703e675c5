package tools

import (
	"context"

	"github.com/weavehq/weave/plugins"
)

// MCP runs the tools of MCP servers (host/mcp's Manager): a call reaches
// it only after the gate (which servers the caller's chain may use) and
// the tool.execute.before hooks, and its result is capped as any tool's.
type MCP interface {
	// Call calls the tool mcp__<server>__<tool>; a failure of the server is
	// a result naming it, a Go error only a call that could not be made.
	Call(ctx context.Context, tool string, args map[string]any) (plugins.ToolResult, error)
	// Search answers mcp_tool_search for agent in session, among the tools
	// of the servers allowed says it may use.
	Search(session, agent string, args map[string]any, allowed func(server string) bool) plugins.ToolResult
}

// WithMCP has the tools run MCP tools through m.
func WithMCP(m MCP) Option { return func(t *Tools) { t.mcp = m } }

// runMCP runs an MCP tool or mcp_tool_search whose call was allowed.
func (t *Tools) runMCP(ctx context.Context, c Caller, session, tool string, args map[string]any) (plugins.ToolResult, error) {
	if t.mcp == nil || isNil(t.mcp) {
		return failf("%s: no MCP servers are configured (mcp_servers in config, or .mcp.json)", tool)
	}
	if tool == plugins.ToolMCPSearch {
		return t.mcp.Search(session, c.Role(), args, func(server string) bool { return t.gate.MCPAllowed(c, server) }), nil
	}
	return t.mcp.Call(ctx, tool, args)
}
