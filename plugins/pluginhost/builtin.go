package pluginhost

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/weavehq/weave/plugins"
)

// BuiltinCommand is the hidden weave subcommand that serves a built-in
// plugin: `weave __plugin <id>` (and `weave __plugin <id> describe`). The host
// starts built-ins by re-executing its own binary with it, so built-ins take
// exactly the path a third-party plugin takes.
const BuiltinCommand = "__plugin"

// idPattern is the shape of a built-in's ID: a namespace and a name, both
// lower case, such as "hooks.start-work" or "agents.tapestry".
var idPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$`)

// Registry holds the built-in hooks and agents by namespaced ID. The CLI
// builds one and fills it from the agents and hooks packages; it is safe for
// concurrent use.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]plugins.ServeConfig
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: make(map[string]plugins.ServeConfig)}
}

// RegisterHook registers a built-in hook. It panics on a malformed or
// duplicate ID or a nil hook: those are programming errors.
func (r *Registry) RegisterHook(id string, h plugins.Hook) {
	if h == nil {
		panic(fmt.Sprintf("pluginhost: RegisterHook(%q): nil hook", id))
	}
	r.register(id, plugins.ServeConfig{Hook: h})
}

// RegisterAgent registers a built-in agent. It panics on a malformed or
// duplicate ID or a nil agent: those are programming errors.
func (r *Registry) RegisterAgent(id string, a plugins.Agent) {
	if a == nil {
		panic(fmt.Sprintf("pluginhost: RegisterAgent(%q): nil agent", id))
	}
	r.register(id, plugins.ServeConfig{Agent: a})
}

func (r *Registry) register(id string, cfg plugins.ServeConfig) {
	if !idPattern.MatchString(id) {
		panic(fmt.Sprintf("pluginhost: built-in ID %q must look like namespace.name (lower case letters, digits, - and _)", id))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.entries[id]; dup {
		panic(fmt.Sprintf("pluginhost: built-in %q registered twice", id))
	}
	r.entries[id] = cfg
}

// Lookup returns what the built-in id serves.
func (r *Registry) Lookup(id string) (plugins.ServeConfig, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	cfg, ok := r.entries[id]
	return cfg, ok
}

// IDs returns the registered IDs, sorted.
func (r *Registry) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.entries))
	for id := range r.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ServeBuiltin serves the built-in id from reg, with args being what follows
// the ID on the command line (empty, or "describe"). It is what the CLI's
// hidden BuiltinCommand runs, and returns the process's exit code.
func ServeBuiltin(reg *Registry, id string, args []string) int {
	return serveBuiltin(reg, id, args, os.Stdout, os.Stderr)
}

func serveBuiltin(reg *Registry, id string, args []string, stdout, stderr io.Writer) int {
	cfg, ok := reg.Lookup(id)
	if !ok {
		fmt.Fprintf(stderr, "weave %s: no built-in plugin %q (have: %s)\n", BuiltinCommand, id, strings.Join(reg.IDs(), ", "))
		return 2
	}
	return shared.Serve(cfg, args, stdout, stderr)
}
