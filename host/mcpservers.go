package host

import (
	"context"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/mcp"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

// openMCP connects to the MCP servers of config and .mcp.json, whose
// stdio servers run in the host's process groups and end with it. Nil when
// none is configured.
func (h *Host) openMCP(ctx context.Context) (*mcp.Manager, error) {
	specs, err := mcp.Specs(h.project, h.cfg)
	if err != nil || len(specs) == 0 {
		return nil, err
	}
	m := mcp.New(specs, MCPOptions(h.project, h.cfg, h))
	h.closers = append(h.closers, m.Close)
	m.Start(ctx)
	return m, nil
}

// MCPOptions are the options of the MCP servers of project: run in its
// directory, in h's process groups when h is not nil, without the models'
// keys (every credential config names), deferred past a tenth of the
// model's window.
func MCPOptions(project string, cfg *config.Config, h *Host) mcp.Options {
	window := cfg.Model.ContextWindow
	if window <= 0 {
		window = model.DefaultContextWindow(cfg.Model.Provider)
	}
	o := mcp.Options{Project: project, Hide: cfg.CredentialEnv(), ContextWindow: window}
	if h != nil {
		o.Procs, o.Logger = h.procs, h.logger
	}
	return o
}

// mcpTools is the door's Options.Tools: the MCP tools agent may use.
func mcpTools(m *mcp.Manager, gate *tools.Gate) func(session, agent string) []plugins.ToolSpec {
	return func(session, agent string) []plugins.ToolSpec {
		c := tools.Caller{Agent: agent}
		return m.Specs(session, agent, func(server string) bool { return gate.MCPAllowed(c, server) })
	}
}

// MCP is the host's MCP servers; nil when none is configured or the host
// was opened without tools.
func (h *Host) MCP() *mcp.Manager { return h.mcp }
