package run

import (
	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// Router picks the agent that carries out a task instead of Tapestry: the
// Shuttle of the task's category, say. It returns the agent's role name
// (its tools pass the gate as that role) and false to leave the task to
// Tapestry.
type Router func(t plans.Task) (role string, agent plugins.Agent, ok bool)

// taskAgent is who carries out t: the router's choice, else Tapestry.
func (r *runner) taskAgent(t plans.Task) (string, plugins.Agent) {
	if r.o.Route != nil {
		if role, a, ok := r.o.Route(t); ok {
			return role, a
		}
	}
	return agents.Tapestry, r.o.Agent
}
