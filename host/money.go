package host

import "github.com/weavehq/weave/host/budget"

// Budget keeps what this host's model calls cost against the budgets
// (budget.run, --budget, and a run's plan and task budgets); nil unless the
// host is opened WithTools. A call it refused is kept as its Tripped.
func (h *Host) Budget() *budget.Ledger { return h.budget }
