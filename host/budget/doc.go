// Package budget keeps what a run spends on models against its budgets:
// the run's, the plan's and the current task's, in US dollars.
//
// The model door asks a Ledger before every model call (Check), with the
// call's worst case: its input and its whole max_tokens priced as output
// (see price.Price.Worst). A call that could take any budget past its
// limit is not made: Check returns an *Error, and so does a call to a
// model whose price is unknown while a budget holds (the cost could not be
// checked; the message says to add a price). After a call the door charges
// what it cost (Charge). A single call therefore never takes a budget past
// its limit by more than its input was underestimated, and the run stops
// before the call, never in the middle of a tool call.
//
// Tasks carried out at once by workers each have their calls checked
// against their own budget and charged to them: the task goes with the
// call's context (Scope, Carry; CheckFor, ChargeFor), and a call without
// one is the task's that Enter made current, as in a lone run. The run's
// and the plan's budgets are shared: a call under way holds its worst case
// against them (Begin, then its end) so that calls made at once cannot
// together cross a budget each fits alone.
//
// The first refusal is kept (Tripped), and each scoped task's
// (TrippedFor), so that the run, which hears of the
// failed call only through the agent (its error crosses a plugin's
// boundary as text), can tell a budget's pause from a failure.
//
// The figures live in memory; the run (host/run) writes them into
// .weave/state.json, which only the host writes, after each charge
// (OnCharge) and with each of its saves, and restores them on resume
// (Restore), so that a resumed run, even one killed mid-task, does not get
// a fresh budget.
// Limits come from config (budget.*), flags (--budget), a task's
// [budget: $N] tag, and the raises `weave budget raise` records in
// state.json.
//
// A task carried out by a worker elsewhere (over the bus) is held to an
// Allowance: the least of what is left of the run's, the plan's and the
// task's budgets when it is handed out (AllowanceFor). The worker's ledger
// holds every call of its run of the task to it (ScopeAllowance) as a task
// budget would, standing in for the task's own budget, which the
// coordinator reckoned in. The coordinator charges what the worker says
// the task spent (Award), never less than nothing nor more than the
// allowance: a worker's figures are never trusted.
//
// An allowance is only what was left when the task was handed out, which
// tasks handed out together each had whole. So the worker's scope may also
// carry a Holder (ScopeHeld): the model door asks it (HoldFor), after this
// ledger's own check, to hold the call's worst case in the coordinator's
// ledger, which Begins it there beside every other call under way; the
// call is made only once that is granted, and its end settles it. A
// refusal there is kept as the task's, as this ledger's own are; no answer
// refuses the call too.
//
// A Ledger is safe for concurrent use.
package budget
