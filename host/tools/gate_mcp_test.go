package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/plugins"
)

// The MCP servers of a role's row: every one for a role that writes, none
// for a read-only role unless config names them, and never more than the
// agents above a delegated one.
func TestGateMCPRows(t *testing.T) {
	cfg := config.Default()
	cfg.Agents = map[string]config.AgentConfig{
		"weft":     {MCP: []string{"docs"}},
		"tapestry": {MCP: []string{}},
		"pattern":  {MCP: []string{"github"}},
		"shuttle":  {MCP: []string{"db"}},
	}
	cfg.Categories = map[string]config.CategoryConfig{"backend": {}}
	cfg.CustomAgents = map[string]config.CustomAgentConfig{
		"reader": {Description: "reads", Prompt: "Read.", Mode: "subagent", Tools: []string{"read"}, MCP: []string{"docs"}},
		"plain":  {Description: "reads", Prompt: "Read.", Mode: "subagent", Tools: []string{"read"}},
	}
	g, err := NewGate(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		caller Caller
		tool   string
		denied string // "" allowed
	}{
		{Caller{Agent: "loom"}, "mcp__github__create_issue", ""},
		{Caller{Agent: "loom"}, plugins.ToolMCPSearch, ""},
		{Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "mcp__github__x", "thread has no MCP server github (thread is read-only; config agents.thread.mcp may give it servers)"},
		{Caller{Agent: "thread"}, plugins.ToolMCPSearch, "thread has no MCP servers"},
		{Caller{Agent: "weft"}, "mcp__docs__search", ""},
		{Caller{Agent: "weft"}, "mcp__github__x", "weft has no MCP server github (config agents.weft.mcp gives it only docs)"},
		{Caller{Agent: "tapestry"}, "mcp__docs__x", "tapestry has no MCP server docs (config agents.tapestry.mcp gives it none)"},
		{Caller{Agent: "pattern", Chain: []string{"loom", "pattern"}}, "mcp__github__x", ""},
		{Caller{Agent: "pattern", Chain: []string{"loom", "pattern"}}, "mcp__docs__x", "pattern has no MCP server docs"},
		{Caller{Agent: "weft", Chain: []string{"loom", "weft"}}, "mcp__docs__x", ""},
		{Caller{Agent: "reader"}, "mcp__docs__x", ""},
		{Caller{Agent: "plain"}, "mcp__docs__x", "plain has no MCP server docs"},
		{Caller{Agent: "shuttle-backend"}, "mcp__db__x", ""},
		{Caller{Agent: "shuttle-backend"}, "mcp__docs__x", "shuttle-backend has no MCP server docs"},
	}
	for _, tt := range tests {
		err := g.Check(ctx, tt.caller, plugins.ToolCall{Tool: tt.tool})
		switch {
		case tt.denied == "" && err != nil:
			t.Errorf("%s calling %s: %v, want allowed", tt.caller, tt.tool, err)
		case tt.denied != "" && (err == nil || !strings.Contains(err.Error(), tt.denied) || !strings.HasPrefix(err.Error(), "denied by the capability matrix")):
			t.Errorf("%s calling %s: %v, want denied by the matrix: %s", tt.caller, tt.tool, err, tt.denied)
		}
	}
	if !g.MCPAllowed(Caller{Agent: "weft", Chain: []string{"loom", "weft"}}, "docs") || g.MCPAllowed(Caller{Agent: "thread"}, "docs") {
		t.Error("MCPAllowed disagrees with Check")
	}
}
