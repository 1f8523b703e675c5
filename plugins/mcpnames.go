package plugins

import "strings"

// MCP tools are offered to a model and named to the gate and the hooks as
// mcp__<server>__<tool>, as Claude Code names them, so that a Claude
// PreToolUse matcher such as "mcp__github__.*" means the same in Weave.
const (
	// MCPPrefix begins the name of every MCP tool.
	MCPPrefix = "mcp__"
	// ToolMCPSearch is the tool that finds MCP tools whose definitions were
	// deferred (too many to offer at once) and makes them callable.
	ToolMCPSearch = "mcp_tool_search"
)

// MCPToolName is the name a model calls the tool of an MCP server by.
// Characters a provider would refuse in a tool name become '_'.
func MCPToolName(server, tool string) string {
	var b strings.Builder
	b.WriteString(MCPPrefix)
	b.WriteString(server)
	b.WriteString("__")
	for _, r := range tool {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// MCPServerOf returns the server of an MCP tool name, and whether name is
// one (mcp__<server>__<tool>, both parts non-empty).
func MCPServerOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, MCPPrefix)
	if !ok {
		return "", false
	}
	server, tool, ok := strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return "", false
	}
	return server, true
}

// IsMCPTool reports whether name is an MCP tool's or the MCP tool search.
func IsMCPTool(name string) bool {
	_, ok := MCPServerOf(name)
	return ok || name == ToolMCPSearch
}
