package host

// SuspendChildren stops the commands the host runs in process groups of
// their own (runbook blocks, bash tool calls, command hooks), and any it
// starts before ContinueChildren, and returns how many groups it stopped.
// Weave calls it before stopping itself on Ctrl-Z: those groups are not in
// the terminal's foreground group, so the terminal's SIGTSTP misses them.
func (h *Host) SuspendChildren() int { return h.procs.Suspend() }

// ContinueChildren continues what SuspendChildren stopped.
func (h *Host) ContinueChildren() { h.procs.Continue() }
