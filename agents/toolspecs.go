package agents

import (
	"encoding/json"

	"github.com/weavehq/weave/plugins"
)

// toolSpecs describes each tool to a model: what it does and the JSON Schema
// of its arguments, as the host's tools read them.
var toolSpecs = map[string]struct{ desc, schema string }{
	plugins.ToolRead: {"Read a file of the project, with line numbers.",
		`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","description":"first line, 1-based"},"limit":{"type":"integer","description":"number of lines"}},"required":["path"]}`},
	plugins.ToolWrite: {"Write a file of the project, replacing it; parent directories are created.",
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`},
	plugins.ToolEdit: {"Replace an exact string in a file; old_string must occur once unless replace_all is set.",
		`{"type":"object","properties":{"path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["path","old_string","new_string"]}`},
	plugins.ToolBash: {"Run a shell command in the project directory; output and exit code are returned.",
		`{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"string","description":"e.g. \"30s\"; defaults to tools.bash.timeout"}},"required":["command"]}`},
	plugins.ToolGlob: {"List the project's files matching a pattern (** crosses directories).",
		`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}`},
	plugins.ToolGrep: {"Search file contents with an RE2 regular expression; answers file:line:text.",
		`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"}},"required":["pattern"]}`},
	plugins.ToolWebFetch: {"Fetch a web page (GET, http or https).",
		`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`},
	plugins.ToolTask: {"Delegate a piece of work to another agent and get its answer.",
		`{"type":"object","properties":{"agent":{"type":"string"},"prompt":{"type":"string"}},"required":["agent","prompt"]}`},
	plugins.ToolTodoWrite: {"Keep this session's checklist.",
		`{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["todos"]}`},
	plugins.ToolPlanCheck: {"Tick a task of a plan once it is done and verified.",
		`{"type":"object","properties":{"task":{"description":"the task's number or title"},"plan":{"type":"string","description":"plan name; default: the active plan"}},"required":["task"]}`},
}

// ToolSpecs describes the named tools to a model, in the order given;
// unknown names are left out.
func ToolSpecs(names []string) []plugins.ToolSpec {
	out := make([]plugins.ToolSpec, 0, len(names))
	for _, n := range names {
		s, ok := toolSpecs[n]
		if !ok {
			continue
		}
		out = append(out, plugins.ToolSpec{Name: n, Description: s.desc, Schema: json.RawMessage(s.schema)})
	}
	return out
}
