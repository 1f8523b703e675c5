package agents

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/weavehq/weave/plugins"
)

// CategoryPrefix starts the name of a category's Shuttle: shuttle-<category>.
const CategoryPrefix = Shuttle + "-"

// CategoryAgent is the name of the Shuttle that serves category.
func CategoryAgent(category string) string {
	return CategoryPrefix + strings.ToLower(strings.TrimSpace(category))
}

// Category is a project's category (config categories.<name>): the tasks
// tagged [category: <name>] go to its own Shuttle, shuttle-<name>.
type Category struct {
	Name        string
	Model       string
	Temperature *float64
	// Tools narrows Shuttle's row; nil keeps it.
	Tools        []string
	PromptAppend string
}

// Custom is a role a project adds (config custom_agents.<name>).
type Custom struct {
	Name        string
	Description string
	// Prompt is the system prompt, already read from prompt_file when the
	// config names a file.
	Prompt string
	// Mode is ModeSubagent (the default: Loom may delegate to it) or
	// ModePrimary (asked directly, weave chat --agent NAME).
	Mode        Mode
	Model       string
	Temperature *float64
	// Tools is the role's row; nil means the read-only row.
	Tools []string
	// Delegates are the roles it may hand work to; they need task in Tools.
	Delegates []string
}

// Project describes how a project changes the eight roles.
type Project struct {
	Categories []Category
	Custom     []Custom
	// Disabled names the roles the project turns off.
	Disabled []string
}

// Undisablable returns the roles a project cannot turn off: Loom is the
// agent a person talks to, Tapestry the one that runs plans.
func Undisablable() []string { return []string{Loom, Tapestry} }

var roleNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// ValidRoleName reports whether name can name a role: lower-case letters,
// digits, "-" and "_", starting with a letter, as bus topics and plugin IDs
// take it.
func ValidRoleName(name string) bool { return roleNameRE.MatchString(name) }

// BuildRoster returns the roles of a project: the eight built-in roles, a
// Shuttle per category (shuttle-<name>: Shuttle's row, narrowed by the
// category's tools, with its model, temperature and prompt_append), and the
// custom agents, less the disabled ones. Loom delegates to every subagent
// left, and its prompt names exactly those. Every problem is reported, not
// only the first: the steps go on past one, and their errors are joined.
func BuildRoster(p Project) ([]Role, error) {
	r := &roster{roles: builtinRoles()}
	r.addCategories(p.Categories)
	r.tellPatternCategories(p.Categories)
	r.addCustom(p.Custom)
	r.disable(p.Disabled)
	r.loomReachesEverySubagent()
	r.checkDelegates()
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	renderLoom(r.roles)
	return r.roles, nil
}

// roster is a roster being built: the roles so far and the problems found.
type roster struct {
	roles []Role
	errs  []error
}

func (r *roster) fail(format string, a ...any) { r.errs = append(r.errs, fmt.Errorf(format, a...)) }

// index is the position of the role called name, or -1.
func (r *roster) index(name string) int {
	return slices.IndexFunc(r.roles, func(o Role) bool { return o.Name == name })
}

// has reports whether there is a role called name so far.
func (r *roster) has(name string) bool { return r.index(name) >= 0 }

// addCategories adds a Shuttle per category: Shuttle's row narrowed by the
// category's tools (which must be in it), with the category's model,
// temperature and prompt_append.
func (r *roster) addCategories(cats []Category) {
	shuttle := r.roles[r.index(Shuttle)]
	for _, c := range cats {
		name := CategoryAgent(c.Name)
		if !ValidRoleName(name) {
			r.fail("categories.%s: a category name is lower-case letters, digits, - and _", c.Name)
			continue
		}
		role := shuttle
		role.Name, role.Title, role.Category = name, fmt.Sprintf("Category Specialist (%s)", c.Name), strings.ToLower(c.Name)
		role.Description = fmt.Sprintf("a task of the %s category", c.Name)
		role.Tools = slices.Clone(shuttle.Tools)
		role.Delegates = nil
		if c.Tools != nil {
			for _, t := range c.Tools {
				if !slices.Contains(shuttle.Tools, t) {
					r.fail("categories.%s.tools: %s is not in shuttle's row (%s)", c.Name, t, strings.Join(shuttle.Tools, ", "))
				}
			}
			role.Tools = inToolOrder(c.Tools)
		}
		if c.Temperature != nil {
			role.Temperature = *c.Temperature
		}
		role.Model = c.Model
		role.Prompt = appendPrompt(shuttle.Prompt, fmt.Sprintf("You serve the `%s` category: the tasks tagged `[category: %s]` in a plan come to you.", c.Name, c.Name))
		role.Prompt = appendPrompt(role.Prompt, c.PromptAppend)
		r.roles = append(r.roles, role)
	}
}

// tellPatternCategories names the project's categories in Pattern's
// prompt, so that the plans it writes tag tasks with them.
func (r *roster) tellPatternCategories(cats []Category) {
	if len(cats) == 0 {
		return
	}
	var tags []string
	for _, c := range cats {
		tags = append(tags, "`"+strings.ToLower(c.Name)+"`")
	}
	i := r.index(Pattern)
	r.roles[i].Prompt = appendPrompt(r.roles[i].Prompt, "This project's categories: "+strings.Join(tags, ", ")+
		". Tag a task with one of them when the task belongs to it; leave other tasks untagged.")
}

// addCustom adds the project's own agents: a new name each, with a prompt;
// the read-only row unless they say otherwise, and task added for one that
// delegates without naming its tools.
func (r *roster) addCustom(custom []Custom) {
	for _, c := range custom {
		switch {
		case !ValidRoleName(c.Name):
			r.fail("custom_agents.%s: a name is lower-case letters, digits, - and _, starting with a letter", c.Name)
			continue
		case r.has(c.Name):
			r.fail("custom_agents.%s: %s is already an agent; choose another name", c.Name, c.Name)
			continue
		case strings.TrimSpace(c.Prompt) == "":
			r.fail("custom_agents.%s: no prompt; set prompt or prompt_file", c.Name)
			continue
		}
		role := Role{Name: c.Name, Title: "Custom Agent", Mode: c.Mode, Temperature: 0.3, Model: c.Model,
			Prompt: strings.TrimRight(c.Prompt, "\n") + "\n", Description: c.Description, Custom: true}
		if role.Mode == "" {
			role.Mode = ModeSubagent
		}
		if c.Temperature != nil {
			role.Temperature = *c.Temperature
		}
		if role.Description == "" {
			role.Description = "work that matches its instructions: " + firstLine(c.Prompt)
		}
		role.Tools = slices.Clone(readOnlyTools)
		if c.Tools != nil {
			role.Tools = inToolOrder(c.Tools)
		}
		if len(c.Delegates) > 0 {
			if c.Tools == nil {
				role.Tools = inToolOrder(append(role.Tools, plugins.ToolTask))
			} else if !slices.Contains(role.Tools, plugins.ToolTask) {
				r.fail("custom_agents.%s.delegates: delegating needs task in its tools", c.Name)
			}
			role.Delegates = slices.Clone(c.Delegates)
		}
		r.roles = append(r.roles, role)
	}
}

// disable removes the disabled roles; Loom and Tapestry stay, and a name
// that is no role is a problem.
func (r *roster) disable(disabled []string) {
	for _, name := range disabled {
		name = strings.ToLower(strings.TrimSpace(name))
		switch {
		case slices.Contains(Undisablable(), name):
			r.fail("disabled_agents: %s cannot be disabled: Loom is whom you talk to and Tapestry runs the plans", name)
		case !r.has(name):
			r.fail("disabled_agents: no agent %q; the agents are %s", name, strings.Join(names(r.roles), ", "))
		}
	}
	r.roles = slices.DeleteFunc(r.roles, func(o Role) bool {
		return slices.ContainsFunc(disabled, func(d string) bool { return strings.EqualFold(strings.TrimSpace(d), o.Name) }) &&
			!slices.Contains(Undisablable(), o.Name)
	})
}

// loomReachesEverySubagent has Loom delegate to the subagents that are
// left: its built-in order first, then the project's agents.
func (r *roster) loomReachesEverySubagent() {
	i := r.index(Loom)
	if i < 0 {
		return
	}
	subagent := func(name string) bool {
		return slices.ContainsFunc(r.roles, func(o Role) bool { return o.Name == name && o.Mode == ModeSubagent })
	}
	loom := &r.roles[i]
	loom.Delegates = slices.DeleteFunc(loom.Delegates, func(d string) bool { return !subagent(d) })
	for _, o := range r.roles {
		if o.Mode == ModeSubagent && !slices.Contains(loom.Delegates, o.Name) {
			loom.Delegates = append(loom.Delegates, o.Name)
		}
	}
}

// checkDelegates makes sure delegation goes only to subagents that are
// there, and never from an agent to itself.
func (r *roster) checkDelegates() {
	for _, role := range r.roles {
		if role.Name == Loom {
			continue
		}
		for _, d := range role.Delegates {
			j := r.index(d)
			switch {
			case j < 0:
				r.fail("custom_agents.%s.delegates: no agent %q; the agents are %s", role.Name, d, strings.Join(names(r.roles), ", "))
			case r.roles[j].Mode != ModeSubagent:
				r.fail("custom_agents.%s.delegates: %s is a primary agent and cannot be delegated to", role.Name, d)
			case d == role.Name:
				r.fail("custom_agents.%s.delegates: an agent cannot delegate to itself", role.Name)
			}
		}
	}
}

// loomPrompt is what Loom's prompt template sees.
type loomPrompt struct {
	Delegates []Role
}

// Has reports whether Loom may delegate to name.
func (l loomPrompt) Has(name string) bool {
	return slices.ContainsFunc(l.Delegates, func(r Role) bool { return r.Name == name })
}

// renderLoom writes Loom's prompt for the roles it delegates to.
func renderLoom(roles []Role) {
	i := slices.IndexFunc(roles, func(r Role) bool { return r.Name == Loom })
	if i < 0 {
		return
	}
	var data loomPrompt
	for _, d := range roles[i].Delegates {
		if j := slices.IndexFunc(roles, func(r Role) bool { return r.Name == d }); j >= 0 {
			data.Delegates = append(data.Delegates, roles[j])
		}
	}
	var b bytes.Buffer
	if err := loomTemplate.Execute(&b, data); err != nil {
		// The template is compiled in; the package's tests render it.
		panic(fmt.Sprintf("agents: render Loom's prompt: %v", err))
	}
	roles[i].Prompt = b.String()
}

var loomTemplate = template.Must(template.New("loom").Parse(prompt(Loom)))

func appendPrompt(p, extra string) string {
	if s := strings.TrimSpace(extra); s != "" {
		return strings.TrimRight(p, "\n") + "\n\n" + s + "\n"
	}
	return p
}

func inToolOrder(tools []string) []string {
	var out []string
	for _, t := range allTools {
		if slices.Contains(tools, t) {
			out = append(out, t)
		}
	}
	return out
}

func names(roles []Role) []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = r.Name
	}
	return out
}
