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
// left, and its prompt names exactly those.
func BuildRoster(p Project) ([]Role, error) {
	roles := builtinRoles()
	var errs []error
	known := func(name string) bool {
		return slices.ContainsFunc(roles, func(r Role) bool { return r.Name == name })
	}
	shuttle := roles[slices.IndexFunc(roles, func(r Role) bool { return r.Name == Shuttle })]
	for _, c := range p.Categories {
		name := CategoryAgent(c.Name)
		if !ValidRoleName(name) {
			errs = append(errs, fmt.Errorf("categories.%s: a category name is lower-case letters, digits, - and _", c.Name))
			continue
		}
		r := shuttle
		r.Name, r.Title, r.Category = name, fmt.Sprintf("Category Specialist (%s)", c.Name), strings.ToLower(c.Name)
		r.Description = fmt.Sprintf("a task of the %s category", c.Name)
		r.Tools = slices.Clone(shuttle.Tools)
		r.Delegates = nil
		if c.Tools != nil {
			for _, t := range c.Tools {
				if !slices.Contains(shuttle.Tools, t) {
					errs = append(errs, fmt.Errorf("categories.%s.tools: %s is not in shuttle's row (%s)", c.Name, t, strings.Join(shuttle.Tools, ", ")))
				}
			}
			r.Tools = inToolOrder(c.Tools)
		}
		if c.Temperature != nil {
			r.Temperature = *c.Temperature
		}
		r.Model = c.Model
		r.Prompt = appendPrompt(shuttle.Prompt, fmt.Sprintf("You serve the `%s` category: the tasks tagged `[category: %s]` in a plan come to you.", c.Name, c.Name))
		r.Prompt = appendPrompt(r.Prompt, c.PromptAppend)
		roles = append(roles, r)
	}
	if len(p.Categories) > 0 {
		var cats []string
		for _, c := range p.Categories {
			cats = append(cats, "`"+strings.ToLower(c.Name)+"`")
		}
		i := slices.IndexFunc(roles, func(r Role) bool { return r.Name == Pattern })
		roles[i].Prompt = appendPrompt(roles[i].Prompt, "This project's categories: "+strings.Join(cats, ", ")+
			". Tag a task with one of them when the task belongs to it; leave other tasks untagged.")
	}
	for _, c := range p.Custom {
		switch {
		case !ValidRoleName(c.Name):
			errs = append(errs, fmt.Errorf("custom_agents.%s: a name is lower-case letters, digits, - and _, starting with a letter", c.Name))
			continue
		case known(c.Name):
			errs = append(errs, fmt.Errorf("custom_agents.%s: %s is already an agent; choose another name", c.Name, c.Name))
			continue
		case strings.TrimSpace(c.Prompt) == "":
			errs = append(errs, fmt.Errorf("custom_agents.%s: no prompt; set prompt or prompt_file", c.Name))
			continue
		}
		r := Role{Name: c.Name, Title: "Custom Agent", Mode: c.Mode, Temperature: 0.3, Model: c.Model,
			Prompt: strings.TrimRight(c.Prompt, "\n") + "\n", Description: c.Description, Custom: true}
		if r.Mode == "" {
			r.Mode = ModeSubagent
		}
		if c.Temperature != nil {
			r.Temperature = *c.Temperature
		}
		if r.Description == "" {
			r.Description = "work that matches its instructions: " + firstLine(c.Prompt)
		}
		r.Tools = slices.Clone(readOnlyTools)
		if c.Tools != nil {
			r.Tools = inToolOrder(c.Tools)
		}
		if len(c.Delegates) > 0 {
			if c.Tools == nil {
				r.Tools = inToolOrder(append(r.Tools, plugins.ToolTask))
			} else if !slices.Contains(r.Tools, plugins.ToolTask) {
				errs = append(errs, fmt.Errorf("custom_agents.%s.delegates: delegating needs task in its tools", c.Name))
			}
			r.Delegates = slices.Clone(c.Delegates)
		}
		roles = append(roles, r)
	}

	for _, name := range p.Disabled {
		name = strings.ToLower(strings.TrimSpace(name))
		switch {
		case slices.Contains(Undisablable(), name):
			errs = append(errs, fmt.Errorf("disabled_agents: %s cannot be disabled: Loom is whom you talk to and Tapestry runs the plans", name))
		case !known(name) && !slices.ContainsFunc(roles, func(r Role) bool { return r.Name == name }):
			errs = append(errs, fmt.Errorf("disabled_agents: no agent %q; the agents are %s", name, strings.Join(names(roles), ", ")))
		}
	}
	roles = slices.DeleteFunc(roles, func(r Role) bool {
		return slices.ContainsFunc(p.Disabled, func(d string) bool { return strings.EqualFold(strings.TrimSpace(d), r.Name) }) &&
			!slices.Contains(Undisablable(), r.Name)
	})

	// Delegation goes only to roles that are there, and Loom reaches every
	// subagent.
	for i := range roles {
		r := &roles[i]
		if r.Name == Loom {
			// The built-in order first, then the project's agents.
			subagent := func(name string) bool {
				return slices.ContainsFunc(roles, func(o Role) bool { return o.Name == name && o.Mode == ModeSubagent })
			}
			r.Delegates = slices.DeleteFunc(r.Delegates, func(d string) bool { return !subagent(d) })
			for _, o := range roles {
				if o.Mode == ModeSubagent && !slices.Contains(r.Delegates, o.Name) {
					r.Delegates = append(r.Delegates, o.Name)
				}
			}
			continue
		}
		for _, d := range r.Delegates {
			j := slices.IndexFunc(roles, func(o Role) bool { return o.Name == d })
			switch {
			case j < 0:
				errs = append(errs, fmt.Errorf("custom_agents.%s.delegates: no agent %q; the agents are %s", r.Name, d, strings.Join(names(roles), ", ")))
			case roles[j].Mode != ModeSubagent:
				errs = append(errs, fmt.Errorf("custom_agents.%s.delegates: %s is a primary agent and cannot be delegated to", r.Name, d))
			case d == r.Name:
				errs = append(errs, fmt.Errorf("custom_agents.%s.delegates: an agent cannot delegate to itself", r.Name))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	renderLoom(roles)
	return roles, nil
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
