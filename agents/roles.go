package agents

import (
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/plugins"
)

// Mode says how an agent is reached: a primary agent talks to the user, a
// subagent is only ever delegated to.
type Mode string

// The modes.
const (
	ModePrimary  Mode = "primary"
	ModeSubagent Mode = "subagent"
)

// The role names, as config (agents.<name>), the capability gate and the
// task tool know them.
const (
	Loom     = "loom"
	Tapestry = "tapestry"
	Pattern  = "pattern"
	Thread   = "thread"
	Spindle  = "spindle"
	Weft     = "weft"
	Warp     = "warp"
	Shuttle  = "shuttle"
)

// ToolNames lists every tool a capability row can name, in the order of
// the matrix's columns: the host's table of tools (plugins.Tools).
func ToolNames() []string { return plugins.ToolNames() }

// Scope restricts where a role's write and edit tools may land. The zero
// Scope means no restriction beyond the project itself.
type Scope struct {
	// Dir is the directory, relative to the project root, that writes must
	// land under after resolving symlinks and "..".
	Dir string
	// Ext is the file extension writes must have, compared exactly
	// (".md" does not admit ".MD").
	Ext string
}

// IsZero reports whether the scope restricts nothing.
func (s Scope) IsZero() bool { return s.Dir == "" && s.Ext == "" }

// String renders the scope as the matrix shows it, e.g. ".weave/**/*.md".
func (s Scope) String() string {
	if s.IsZero() {
		return "anywhere in the project"
	}
	return strings.TrimSuffix(s.Dir, "/") + "/**/*" + s.Ext
}

// ScopedTools are the tools a Scope applies to.
func ScopedTools() []string { return []string{plugins.ToolWrite, plugins.ToolEdit} }

// Role is one of the eight agent roles: what it is for, how it is run, which
// tools it may use and whom it may delegate to.
type Role struct {
	Name        string
	Title       string
	Mode        Mode
	Temperature float64
	// Tools is the role's capability row: the tools it may call. The host's
	// gate enforces it; config may narrow it.
	Tools []string
	// WriteScope restricts the role's write and edit tools.
	WriteScope Scope
	// Delegates are the roles the task tool may hand work to.
	Delegates []string
	// Prompt is the role's system prompt.
	Prompt string
	// Model names the role's model; "" means model.name. Categories and
	// custom agents set it; agents.<name>.model overrides it.
	Model string
	// Description says when to delegate to the role, as Loom's prompt
	// lists it.
	Description string
	// Category is the category a Shuttle serves (shuttle-<category>),
	// "" for every other role.
	Category string
	// Custom marks a role the project's config added (custom_agents).
	Custom bool
}

// Can reports whether the role's own row has tool.
func (r Role) Can(tool string) bool { return slices.Contains(r.Tools, tool) }

//go:embed prompts/*.md
var promptFS embed.FS

// Capability rows. The spec's matrix covers read, write, edit, task,
// webfetch, glob, grep and bash; todowrite and plan_check are decided here:
//   - todowrite (a per-session checklist, no file is written) goes to every
//     role that plans or carries out multi-step work: Loom, Tapestry,
//     Pattern, Shuttle. The read-only roles keep exactly the spec's row.
//   - plan_check ticks a task in a plan file, so it goes to the roles that
//     execute plans: Tapestry, and Loom and Shuttle, which have every tool.
//     Pattern writes plans but does not execute them, so it cannot tick.
//   - skill (reads a skill's instructions, changes nothing) goes to every
//     role, the read-only ones too.
var (
	allTools      = ToolNames()
	readOnlyTools = []string{plugins.ToolRead, plugins.ToolBash, plugins.ToolGlob, plugins.ToolGrep, plugins.ToolWebFetch, plugins.ToolSkill}
)

func without(tools []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(tools), func(t string) bool { return slices.Contains(drop, t) })
}

// Roles returns the eight roles, primaries first. Each call returns fresh
// copies that the caller may change. A project's roles (categories, custom
// agents, disabled ones) are BuildRoster's.
func Roles() []Role {
	roles := builtinRoles()
	renderLoom(roles)
	return roles
}

func builtinRoles() []Role {
	roles := []Role{
		{Name: Loom, Title: "Main Orchestrator", Mode: ModePrimary, Temperature: 0.3,
			Tools: slices.Clone(allTools), Delegates: []string{Thread, Spindle, Pattern, Weft, Warp, Shuttle}},
		{Name: Tapestry, Title: "Execution Engine", Mode: ModePrimary, Temperature: 0.2,
			Tools: without(allTools, plugins.ToolTask)},
		{Name: Pattern, Title: "Strategic Planner", Mode: ModeSubagent, Temperature: 0.1,
			Tools: without(allTools, plugins.ToolTask, plugins.ToolPlanCheck), WriteScope: Scope{Dir: layout.DirName, Ext: ".md"},
			Description: "the request needs a structured plan before anyone writes code"},
		{Name: Thread, Title: "Codebase Explorer", Mode: ModeSubagent, Temperature: 0.1,
			Tools:       slices.Clone(readOnlyTools),
			Description: "you need code found or read quickly (where is X, how is Y used)"},
		{Name: Spindle, Title: "External Researcher", Mode: ModeSubagent, Temperature: 0.2,
			Tools:       slices.Clone(readOnlyTools),
			Description: "you need external documentation, an API reference, a library's docs"},
		{Name: Weft, Title: "Reviewer/Auditor", Mode: ModeSubagent, Temperature: 0.1,
			Tools:       slices.Clone(readOnlyTools),
			Description: "work or a plan needs review before it ships"},
		{Name: Warp, Title: "Security Auditor", Mode: ModeSubagent, Temperature: 0.1,
			Tools:       slices.Clone(readOnlyTools),
			Description: "a change touches authentication, secrets, input handling or crypto"},
		{Name: Shuttle, Title: "Category Specialist", Mode: ModeSubagent, Temperature: 0.3,
			Tools:       slices.Clone(allTools),
			Description: "a self-contained, domain-specific task that no configured category covers"},
	}
	for i := range roles {
		roles[i].Prompt = prompt(roles[i].Name)
	}
	return roles
}

// RoleNames lists the built-in role names in the order of Roles.
func RoleNames() []string {
	return []string{Loom, Tapestry, Pattern, Thread, Spindle, Weft, Warp, Shuttle}
}

// RoleByName returns the role called name (case-insensitive).
func RoleByName(name string) (Role, bool) {
	for _, r := range Roles() {
		if strings.EqualFold(r.Name, name) {
			return r, true
		}
	}
	return Role{}, false
}

func prompt(name string) string {
	b, err := promptFS.ReadFile("prompts/" + name + ".md")
	if err != nil {
		// The prompts are compiled in; a missing one is a build mistake that
		// the package's tests catch.
		panic(fmt.Sprintf("agents: no embedded prompt for role %s: %v", name, err))
	}
	return string(b)
}
