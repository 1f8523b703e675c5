package host

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// Lists of names that a package keeps for itself, because it may not
// import the package that owns them, must agree with their source: a name
// added in one place only fails here.
func TestNamesAgreeWithTheirSource(t *testing.T) {
	tests := []struct {
		what         string
		copy, source []string
	}{
		{"config agents: names vs agents.RoleNames", config.AgentNames(), agents.RoleNames()},
		{"config hooks: events vs hooks.ClaudeEventNames", config.HookEvents(), hooks.ClaudeEventNames()},
		{"config hooks: types vs hooks.ClaudeHookTypes", config.HookTypes(), hooks.ClaudeHookTypes()},
		{"capability matrix columns vs plugins.ToolNames", agents.ToolNames(), plugins.ToolNames()},
		{"config disabled_agents: undisablable vs agents.Undisablable", config.UndisablableAgents(), agents.Undisablable()},
		{"config categories: agent name vs agents.CategoryAgent", []string{config.CategoryAgent("x")}, []string{agents.CategoryAgent("x")}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.source, tc.copy); diff != "" {
			t.Errorf("%s (-source +copy):\n%s", tc.what, diff)
		}
	}
}

// Every name the rows, the Claude mapping and the events use exists where
// it is defined.
func TestNamesResolve(t *testing.T) {
	for _, name := range agents.RoleNames() {
		r, ok := agents.RoleByName(name)
		if !ok {
			t.Errorf("role %q has no definition", name)
			continue
		}
		for _, tool := range r.Tools {
			if _, ok := plugins.LookupTool(tool); !ok {
				t.Errorf("role %s grants %q, which is not in plugins.Tools", name, tool)
			}
		}
		for _, d := range r.Delegates {
			if !slices.Contains(agents.RoleNames(), d) {
				t.Errorf("role %s delegates to %q, which is not a role", name, d)
			}
		}
	}
	for _, ev := range hooks.ClaudeFiredEventNames() {
		w, ok := hooks.WeaveEvent(ev)
		if !ok || !slices.Contains(plugins.Events, w) {
			t.Errorf("Claude event %s maps to %q (%v), which is not a Weave event", ev, w, ok)
		}
	}
	for _, d := range plugins.Tools() {
		if d.Claude == "" || hooks.WeaveToolName(d.Claude) != d.Name {
			t.Errorf("tool %s: Claude name %q does not map back", d.Name, d.Claude)
		}
	}
}
