package tools

import (
	"maps"
	"slices"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
)

// Roster returns the roles of the project cfg configures: the eight
// built-in roles, a Shuttle per category (shuttle-<name>), the custom
// agents, less disabled_agents (agents.BuildRoster). Every part of the host
// that knows the roles (the gate, the agent plugins, the bus, weave agents
// list) takes them from here, so that they agree.
func Roster(cfg *config.Config) ([]agents.Role, error) {
	if cfg == nil {
		cfg = config.Default()
	}
	var p agents.Project
	for _, name := range slices.Sorted(maps.Keys(cfg.Categories)) {
		c := cfg.Categories[name]
		p.Categories = append(p.Categories, agents.Category{Name: name, Model: c.Model, Temperature: c.Temperature,
			Tools: c.Tools, PromptAppend: c.PromptAppend})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.CustomAgents)) {
		c := cfg.CustomAgents[name]
		p.Custom = append(p.Custom, agents.Custom{Name: name, Description: c.Description, Prompt: c.Prompt,
			Mode: agents.Mode(c.Mode), Model: c.Model, Temperature: c.Temperature, Tools: c.Tools, Delegates: c.Delegates})
	}
	p.Disabled = cfg.DisabledAgents
	return agents.BuildRoster(p)
}

// shuttleRow is Shuttle's row after agents.shuttle.tools: the ceiling of
// every category's Shuttle.
func shuttleRow(cfg *config.Config) []string {
	if ac, ok := cfg.Agents[agents.Shuttle]; ok && len(ac.Tools) > 0 {
		return ac.Tools
	}
	r, _ := agents.RoleByName(agents.Shuttle)
	return r.Tools
}
