package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/plugins"
)

// Server states, as Status and `weave mcp list` show them.
const (
	StateStarting   = "starting"
	StateReady      = "ready"
	StateRestarting = "restarting"
	StateFailed     = "failed"
	StateStopped    = "stopped"
)

// Options are what a Manager is built from.
type Options struct {
	// Project is the directory stdio servers run in.
	Project string
	// Procs starts and tracks stdio servers' process groups; nil: untracked
	// (they still run in their own groups and are stopped by Close).
	Procs *proc.Set
	// Environ is the host's environment in os.Environ() form; nil means
	// os.Environ().
	Environ []string
	// Hide names variables no server gets (model.api_key_env).
	Hide   []string
	Logger *slog.Logger
	// StartTimeout bounds one server's start and handshake; zero: 30s.
	StartTimeout time.Duration
	// MaxRestarts bounds the restarts that follow each other without a
	// call answered in between; zero: 5.
	MaxRestarts int
	// ContextWindow is the model's window in tokens, for the deferral
	// budget; zero leaves only the tool count as budget.
	ContextWindow int
}

// Tool is one tool of a server as the model knows it.
type Tool struct {
	// Name is mcp__<server>__<tool>.
	Name   string `json:"name"`
	Server string `json:"server"`
	// Tool is the server's own name for it.
	Tool        string          `json:"tool"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"input_schema"`
}

// Spec is the tool as offered to a model.
func (t Tool) Spec() plugins.ToolSpec {
	return plugins.ToolSpec{Name: t.Name, Description: t.Description, Schema: t.Schema}
}

// Status is one server as `weave mcp list` shows it.
type Status struct {
	Name      string   `json:"name"`
	Source    string   `json:"source"`
	Type      string   `json:"type"`
	State     string   `json:"state"`
	Error     string   `json:"error,omitempty"`
	Restarts  int      `json:"restarts,omitempty"`
	ToolCount int      `json:"tool_count"`
	Tools     []string `json:"tools"`
}

// Manager holds the connections to the MCP servers of a run.
type Manager struct {
	opts   Options
	log    *slog.Logger
	ctx    context.Context // ends at Close: restarts stop, stdio groups are killed
	cancel context.CancelFunc
	client *sdk.Client

	servers []*server // by name
	byName  map[string]*server

	mu     sync.Mutex
	tools  map[string]Tool               // by Name, every ready server's
	loaded map[[2]string]map[string]bool // session, agent -> tools mcp_tool_search loaded
	closed bool
	wg     sync.WaitGroup
}

// New returns the manager of specs; Start connects.
func New(specs []Spec, o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.MaxRestarts <= 0 {
		o.MaxRestarts = 5
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{opts: o, log: o.Logger, ctx: ctx, cancel: cancel, byName: map[string]*server{},
		tools: map[string]Tool{}, loaded: map[[2]string]map[string]bool{},
		client: sdk.NewClient(&sdk.Implementation{Name: "weave", Version: "1"}, nil)}
	for _, s := range specs {
		sv := &server{m: m, spec: s, state: StateStarting, ready: make(chan struct{})}
		m.servers = append(m.servers, sv)
		m.byName[s.Name] = sv
	}
	return m
}

// Start connects to every server at once and returns when each is ready
// or has failed (Status says why); the run goes on without a failed one.
func (m *Manager) Start(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.connect(ctx); err != nil {
				s.fail(err)
				m.log.Warn("mcp server did not start", "server", s.spec.Name, "err", err)
			}
		}()
	}
	wg.Wait()
}

// Close stops every server: sessions closed, stdio groups stopped.
func (m *Manager) Close(context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	for _, s := range m.servers {
		s.close()
	}
	m.cancel()
	m.wg.Wait()
	return nil
}

// Servers names the configured servers, sorted.
func (m *Manager) Servers() []string {
	out := make([]string, len(m.servers))
	for i, s := range m.servers {
		out[i] = s.spec.Name
	}
	return out
}

// Status reports every server.
func (m *Manager) Status() []Status {
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		st := Status{Name: s.spec.Name, Source: s.spec.Source, Type: s.spec.Type, State: s.state, Restarts: s.restarts, Tools: []string{}}
		if s.err != nil {
			st.Error = s.err.Error()
		}
		for _, t := range s.tools {
			st.Tools = append(st.Tools, t.Name)
		}
		st.ToolCount = len(st.Tools)
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Tools returns every tool of the ready servers, sorted by name.
func (m *Manager) Tools() []Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Tool, 0, len(m.tools))
	for _, name := range slices.Sorted(maps.Keys(m.tools)) {
		out = append(out, m.tools[name])
	}
	return out
}

// Call calls the MCP tool name (mcp__<server>__<tool>) with args. A failure
// of the server (it died, it is restarting, it does not answer) is a
// result naming it; a Go error only when ctx ended.
func (m *Manager) Call(ctx context.Context, name string, args map[string]any) (plugins.ToolResult, error) {
	server, ok := plugins.MCPServerOf(name)
	if !ok {
		return failure("%q is not an MCP tool name (mcp__<server>__<tool>)", name), nil
	}
	s := m.byName[server]
	if s == nil {
		return failure("there is no MCP server %q; the servers are %s", server, orNone(m.Servers())), nil
	}
	sess, tool, res := s.session(ctx, name)
	if sess == nil {
		if ctx.Err() != nil {
			return plugins.ToolResult{}, ctx.Err()
		}
		return res, nil
	}
	if args == nil {
		args = map[string]any{}
	}
	out, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return plugins.ToolResult{}, ctx.Err()
		}
		// os.ErrClosed: the watcher saw the process end and closed its
		// pipes while the call was still reading them.
		if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrClosed) || s.dead(sess) {
			// The connection ended under the call: the watcher is about to
			// see it; once it has, the next call waits for the restart
			// instead of reaching the dead session.
			s.awaitDead(sess, 2*time.Second)
			return failure("MCP server %s stopped during the call to %s; it is being restarted, try again: %v", server, tool, err), nil
		}
		return failure("MCP server %s: %s failed: %v", server, tool, err), nil
	}
	s.answered()
	return convert(out), nil
}

func failure(format string, a ...any) plugins.ToolResult {
	return plugins.ToolResult{Output: fmt.Sprintf(format, a...), IsError: true}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none (mcp_servers in config, or .mcp.json)"
	}
	return strings.Join(names, ", ")
}

// expand reads ${VAR} references from the host's environment, never one of
// weave's own credentials or a hidden variable.
func (m *Manager) expand(s string) (string, error) {
	return expand(s, func(name string) (string, bool) {
		for _, kv := range m.opts.Environ {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}, func(name string) bool {
		if slices.Contains(m.opts.Hide, name) {
			return true
		}
		for _, kv := range m.opts.Environ {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return proc.IsWeaveCredential(k, v)
			}
		}
		return proc.IsWeaveCredential(name, "")
	})
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
