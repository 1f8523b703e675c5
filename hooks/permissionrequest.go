package hooks

import (
	"maps"

	"github.com/weavehq/weave/plugins"
)

// permissionDecision is a PermissionRequest hook's answer, in
// hookSpecificOutput.decision: behavior allow or deny, and for deny the
// message the agent reads.
type permissionDecision struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message"`
}

// permissionRequest turns a PermissionRequest hook's JSON into a decision
// on permission.request: allow approves the call (Modify, with the
// arguments as asked: updatedInput is not applied), deny blocks it with
// its message, anything else leaves the question to the one asked. Exit
// code 2 denies as a block does (handleWithNote).
func (h *CommandHook) permissionRequest(ev plugins.Event, hs *claudeSpecific) plugins.Decision {
	if hs == nil || hs.Decision == nil {
		return plugins.Decision{Action: plugins.Allow}
	}
	switch hs.Decision.Behavior {
	case "allow":
		args := maps.Clone(ev.Args)
		if args == nil {
			args = map[string]any{}
		}
		return plugins.Decision{Action: plugins.Modify, Args: args}
	case "deny":
		return plugins.Decision{Action: plugins.Block, Reason: orDefault(hs.Decision.Message, "denied by command hook "+h.spec.Name)}
	}
	return plugins.Decision{Action: plugins.Allow}
}
