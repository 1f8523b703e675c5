// Package workers spreads a run's tasks over workers joined on a NATS bus
// with JetStream: the coordinator offers each ready task through the
// contract net of bus/collab, records the award as a lease in JetStream's
// key-value store, and takes the task's commit back as a git bundle from
// JetStream's object store. It imports nothing of the host: what a worker
// does with a task is the Exec it is given.
//
// # The award
//
//   - Offer calls for proposals on
//     thread.offer-<coordinator>-<task>-<award>.broadcast carrying the
//     task's needs (labels, category, model); the bids come back to one
//     subscription the coordinator made when it started
//     (thread.offer-<coordinator>-*.reply), not one per call. Every worker
//     that fits (Fits: it has every label, can run the category and model,
//     and has a free slot) bids with the share of its slots still free as
//     its score, naming the bases it holds; every other declines (score
//     -1, never awarded).
//   - Before the award is recorded, the base commit is bundled as what the
//     winner lacks (basis.go): over a base it holds that this coordinator
//     offered (in the assignment when small, else base-<commit>-<basis>),
//     else the whole history (base-<commit>), each stored once; no worker
//     hears of the award before its bundle is stored. A worker that cannot write the bundle
//     in (it lacks the basis after all) asks for the whole history with
//     the award's token.
//   - The call closes before its window once no better bid can come: one
//     bid has score 1 (the best there is) and the preferred worker
//     (CoordinatorOptions.Prefer, the run's own, which wins a tie) has
//     answered or is not live, or every worker live in the registry (its
//     entry written within the registry's age, as this process saw it)
//     has answered. A call every worker declined is made again only once
//     its window has passed.
//   - The best bid wins. Its award is recorded as a lease (bucket
//     WEAVE_LEASES, key <run>.<task>) while the worker is sent the
//     assignment at its mailbox: the worker takes it only when the lease
//     names it, that award, that attempt and the offer's digest, reading
//     the lease again for up to two seconds until it does (the put and the
//     assignment travel side by side), and refuses it then. A peer that
//     can write to the mailbox but not to the leases cannot make a worker
//     run anything. The award counts only once the put succeeded: one
//     that failed releases the lease, in case it was stored all the same,
//     and takes the award back. A worker without a free slot refuses, and
//     the next bid is tried.
//   - Each award has its own id; the task's attempt id (its commit's
//     Weave-Attempt trailer) stays the same across awards.
//   - A bid that reaches nobody (the worker's bus has not yet heard of the
//     coordinator's subscription to the calls' replies, which travels
//     through the bus's subscription registry, slower than a call) is
//     sent again until someone takes it, the call's summary
//     says it ended, or ten seconds pass.
//
// # Budgets
//
// An offer may carry an Allowance: what the task may still spend on model
// calls. The worker's Exec holds the task's calls to it and reports what
// they cost with ReportSpend; the result carries that Spend (known cost,
// calls of unknown price, and the call refused over the allowance, if
// one stopped the task). What to charge is the caller's: bus/workers
// passes the figures on and trusts none of them.
//
// With CoordinatorOptions.Holds set, the worker's Exec of a task whose
// offer carries an Allowance has a hold client (HoldsFor): before each
// model call it asks the coordinator to hold the call's worst case, and
// settles the hold when the call ends (hold.go). The requests travel on
// weave.hold.<coordinator>.<worker>, plain NATS request and reply; the
// coordinator takes one only on the subject of the worker the award's
// lease names, with the award's token, while an Offer waits for the
// award's result, and tells the HoldServer when each award starts and
// ends, so that holds not settled are released, or charged what they held
// when the worker may still be making the call (the award stopped by the
// coordinator, or its lease lost). A worker that gets no answer within
// the lease is told so (ErrNoHold): the call is not made.
//
// # The bundle store
//
// A result leaves the store once its commit is fetched, a log once the
// caller has read it (Forget); the objects of an award taken back go at
// once and again when its late result is refused; a base goes once no
// Offer of this coordinator uses it and no lease names it; Close removes
// whatever the coordinator's awards and bases left (gc.go).
//
// # Leases
//
// Each award has a secret token, sent only in the assignment (a request
// to the worker's own process, never on a broadcast, where the award id
// and the worker's name are seen by every bidder); the lease keeps its
// hash, and every heartbeat and result must carry the token.
//
// The coordinator alone writes leases. A worker sends a heartbeat every
// third of the lease; the coordinator renews the lease by compare-and-swap
// on its revision, so a renewal never revives a lease lost meanwhile. A
// worker silent for longer than the lease (killed, cut off) loses it: the
// lease is released and the task offered again under a new award. A
// worker whose heartbeat is refused stops the task, and so does one that
// has had no heartbeat taken for a whole lease (cut off from NATS): the
// coordinator counts it lost by then.
//
// # Results
//
// A worker returns its commit as a bundle over the task's base and its
// output, in the result itself when small (inline.go), else stored
// (result-<award>, log-<award>). The coordinator takes a
// result only from the worker holding the lease under that award, with
// the award's token, while
// the Offer still waits for it: a stale award, a peer never awarded the
// task and a second result for one award are refused, and the worker is
// told why in the ack. It checks the result against the lease it granted
// itself, and reads the bucket while it unpacks the bundle: no branch
// moves, and no result counts, unless the bucket still names the award
// (a coordinator started anew for the run may have taken it back). The
// lease is then released at the revision this coordinator last wrote. The commit is checked before Offer returns it: it
// is the one the bundle names, its parent is the base, and its trailers
// name the run, the task and the attempt. Its verify blocks are not run
// here: a worker's claim is never trusted, the caller lands the commit
// and runs them on the landed tree.
//
// # A git remote instead of bundles
//
// With CoordinatorOptions.Remote (run.remote), the base is pushed to
// refs/weave/base/<commit> on that git remote and the offer carries the
// remote's URL; only a worker given that URL (AgentOptions.Remotes) bids,
// fetches the base there and pushes its commit to
// refs/weave/results/<award>-<commit>, which the coordinator fetches and
// deletes. Each ref names the commit it must hold and each side checks
// it: a third party that can push to the remote can make a task fail,
// never slip other code in. The result's other checks are a bundle's.
//
// # Faults
//
// Both sides ride out a NATS restart: the buckets and the object store are
// on file storage, the bus reconnects, a heartbeat or result that could
// not be sent is sent again, and a lease is judged only from what the
// bucket says once it can be read. A coordinator that cannot read the
// bucket does not declare a lease lost.
//
// A coordinator killed mid-run leaves its leases behind. The one started
// again for the run calls TakeBack first: every lease of the run is
// released, so the worker still running such a task has its next
// heartbeat refused, stops it and frees its slot, and a result of such an
// award is refused (no Offer waits for it). The caller offers the
// unfinished tasks again under new awards; a commit that had come back
// before the kill is on the task's branch already.
//
// # Registry
//
// Each worker writes an entry (Info: name, labels, slots, the tasks it
// runs, its last heartbeat) to the bucket WEAVE_WORKERS when it joins,
// every AgentOptions.Announce and whenever its tasks change, and removes
// it when it leaves; an entry not renewed for a minute vanishes.
package workers
