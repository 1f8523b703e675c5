package host

import (
	"errors"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host/run"
)

// Handed makes this host the one a worker process (`weave worker`) runs
// every task a coordinator hands it in: loaded once, its plugins, hooks,
// sandbox and gate shared by the tasks it runs at once, each task in a
// worktree of its own (run.HandedHost). The host must be opened WithTools.
//
// Each task's agent is told the instruction files and skills of the code in
// its worktree (treeGuide), not this host's project's, and this host's hooks
// hear each task's session start and end.
//
// Each task is bounded as a lone run of it would be (run.HandedTaskLimit):
// the ledger keeps no run- or plan-wide bound across the tasks, which are
// not one run.
func (h *Host) Handed() (*run.HandedHost, error) {
	if h.tools == nil {
		return nil, errors.New("run handed tasks: the host was opened without its tools (host.WithTools)")
	}
	h.budget.SetLimits(0, 0)
	return &run.HandedHost{
		Config: h.cfg,
		Tools:  h.tools,
		Agent:  h.sup.Agent(agents.AgentID(agents.Tapestry)),
		Route:  h.categoryRoute,
		Logger: h.logger,
		Budget: h.budget,
		Halted: h.guardDown.err,
		Hooks:  h.pipeline,
		Guide:  h.treeGuide,
	}, nil
}
