package agents

import "github.com/weavehq/weave/plugins"

// ToolSpecs describes the named tools to a model, in the order given, from
// the host's table of tools (plugins.Tools); unknown names are left out.
func ToolSpecs(names []string) []plugins.ToolSpec {
	out := make([]plugins.ToolSpec, 0, len(names))
	for _, n := range names {
		if d, ok := plugins.LookupTool(n); ok {
			out = append(out, d.Spec())
		}
	}
	return out
}
