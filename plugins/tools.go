package plugins

import (
	"encoding/json"
	"maps"
	"slices"
)

// Tool names, as the capability matrix and the tool gate know them.
const (
	ToolRead      = "read"
	ToolWrite     = "write"
	ToolEdit      = "edit"
	ToolBash      = "bash"
	ToolGlob      = "glob"
	ToolGrep      = "grep"
	ToolWebFetch  = "webfetch"
	ToolTask      = "task"
	ToolTodoWrite = "todowrite"
	ToolPlanCheck = "plan_check"
	ToolSkill     = "skill"
)

// ToolDef is one tool of the host, as every part of Weave knows it: the
// capability matrix and config validation by its name, a model by its
// description and argument schema, a Claude Code command hook by its Claude
// name and arguments, the gate and the hooks by its path argument.
type ToolDef struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the tool's arguments.
	Schema string
	// Claude is Claude Code's name for the tool, the tool_name a command
	// hook reads.
	Claude string
	// ClaudeArgs renames arguments for Claude Code: Weave name -> Claude
	// name. Other arguments keep their names.
	ClaudeArgs map[string]string
	// PathArg is the argument that names a file or directory of the
	// project, or "" when the tool takes none.
	PathArg string
}

// Spec is the tool as offered to a model.
func (d ToolDef) Spec() ToolSpec {
	return ToolSpec{Name: d.Name, Description: d.Description, Schema: json.RawMessage(d.Schema)}
}

// Argument names the table renames for Claude Code.
const (
	argPath     = "path"
	argAgent    = "agent"
	argSubagent = "subagent_type"
	// pathToClaude is Claude Code's name for a file path.
	pathToClaude = "file_path"
)

// toolTable is every tool of the host, in the order of the capability
// matrix's columns. Adding a tool is a row here, its implementation in
// host/tools (one file that registers itself), and the matrix rows that
// grant it (agents/roles.go).
var toolTable = []ToolDef{
	{Name: ToolRead, Claude: "Read", PathArg: argPath, ClaudeArgs: map[string]string{argPath: pathToClaude},
		Description: "Read a file of the project, with line numbers.",
		Schema:      `{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","description":"first line, 1-based"},"limit":{"type":"integer","description":"number of lines"}},"required":["path"]}`},
	{Name: ToolWrite, Claude: "Write", PathArg: argPath, ClaudeArgs: map[string]string{argPath: pathToClaude},
		Description: "Write a file of the project, replacing it; parent directories are created.",
		Schema:      `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`},
	{Name: ToolEdit, Claude: "Edit", PathArg: argPath, ClaudeArgs: map[string]string{argPath: pathToClaude},
		Description: "Replace an exact string in a file; old_string must occur once unless replace_all is set.",
		Schema:      `{"type":"object","properties":{"path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["path","old_string","new_string"]}`},
	{Name: ToolBash, Claude: "Bash",
		Description: "Run a shell command in the project directory; output and exit code are returned.",
		Schema:      `{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"string","description":"e.g. \"30s\"; defaults to tools.bash.timeout"}},"required":["command"]}`},
	{Name: ToolGlob, Claude: "Glob", PathArg: argPath,
		Description: "List the project's files matching a pattern (** crosses directories).",
		Schema:      `{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}`},
	{Name: ToolGrep, Claude: "Grep", PathArg: argPath,
		Description: "Search file contents with an RE2 regular expression; answers file:line:text.",
		Schema:      `{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"}},"required":["pattern"]}`},
	{Name: ToolWebFetch, Claude: "WebFetch",
		Description: "Fetch a web page (GET, http or https).",
		Schema:      `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`},
	{Name: ToolTask, Claude: "Task", ClaudeArgs: map[string]string{argAgent: argSubagent},
		Description: "Delegate a piece of work to another agent and get its answer.",
		Schema:      `{"type":"object","properties":{"agent":{"type":"string"},"prompt":{"type":"string"}},"required":["agent","prompt"]}`},
	{Name: ToolTodoWrite, Claude: "TodoWrite",
		Description: "Keep this session's checklist.",
		Schema:      `{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["todos"]}`},
	{Name: ToolPlanCheck, Claude: "PlanCheck",
		Description: "Tick a task of a plan once it is done and verified.",
		Schema:      `{"type":"object","properties":{"task":{"description":"the task's number or title"},"plan":{"type":"string","description":"plan name; default: the active plan"}},"required":["task"]}`},
	{Name: ToolSkill, Claude: "Skill",
		Description: "Load a skill's instructions by its name, as the system prompt lists the skills.",
		Schema:      `{"type":"object","properties":{"name":{"type":"string","description":"the skill's name"}},"required":["name"]}`},
}

// Tools returns every tool of the host, in the matrix's column order. The
// slice is a fresh copy.
func Tools() []ToolDef {
	out := slices.Clone(toolTable)
	for i := range out {
		if out[i].ClaudeArgs != nil {
			out[i].ClaudeArgs = maps.Clone(out[i].ClaudeArgs)
		}
	}
	return out
}

// ToolNames lists the name of every tool, in the matrix's column order.
func ToolNames() []string {
	out := make([]string, len(toolTable))
	for i, d := range toolTable {
		out[i] = d.Name
	}
	return out
}

// IsTool reports whether name is a tool of the host.
func IsTool(name string) bool {
	for _, d := range toolTable {
		if d.Name == name {
			return true
		}
	}
	return false
}

// LookupTool returns the tool called name.
func LookupTool(name string) (ToolDef, bool) {
	for _, d := range toolTable {
		if d.Name == name {
			d.ClaudeArgs = maps.Clone(d.ClaudeArgs)
			return d, true
		}
	}
	return ToolDef{}, false
}

// ToolPath returns the path argument of a tool call, under Weave's name or
// Claude Code's (a command hook may hand arguments back in Claude's shape),
// so that the gate, the hooks and the tool agree on which file a call
// touches.
func ToolPath(args map[string]any) (string, bool) {
	for _, k := range pathArgs {
		if s, ok := args[k].(string); ok && s != "" {
			return s, true
		}
	}
	return "", false
}

// pathArgs are the names a path argument goes by, worked out once.
var pathArgs = pathArgNames()

// pathArgNames are the names a path argument goes by: each tool's PathArg,
// then Claude Code's names for them.
func pathArgNames() []string {
	var names, claude []string
	for _, d := range toolTable {
		if d.PathArg == "" {
			continue
		}
		if !slices.Contains(names, d.PathArg) {
			names = append(names, d.PathArg)
		}
		if c, ok := d.ClaudeArgs[d.PathArg]; ok && !slices.Contains(claude, c) {
			claude = append(claude, c)
		}
	}
	return append(names, claude...)
}
