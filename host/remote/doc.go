// Package remote makes the workers of a run coordinated over NATS
// (`start-work --workers N --bus nats://...`): a Pool of run.Workers whose
// Run offers its task through the contract net of bus/workers and returns
// the commit of whichever worker won the award, fetched into the
// coordinator's repository. The run's own local workers join the same
// contract net as one bidder, so a task goes to the best fitting worker,
// here or elsewhere.
//
// # What it guarantees
//
//   - A task's commit reaches the run only through bus/workers' checks
//     (the lease's worker and award, the commit's base and trailers), and
//     then only as a run.Outcome: the run lands it and runs its verify
//     blocks on the landed tree as for any local task. Nothing a worker
//     claims is taken as done.
//   - A worker that goes silent loses its task, which is offered again;
//     the run sees one Outcome per Run, never two.
//   - The local workers run tasks exactly as without a bus: the pool hands
//     each the run's own Assignment, blocks as started and all.
//   - Under a budget, no model call of a remote task is made before the
//     run's ledger holds its worst case beside every other call under
//     way (hold.go): the run's, the plan's and the task's budgets hold
//     exactly however many tasks run at once, wherever. A worker's holds
//     are charged no more than they held, released when its result
//     comes, and charged what they held when the worker may still be
//     making the call (the run stopped the task, or its lease was lost);
//     the result's figures are never charged twice.
package remote
