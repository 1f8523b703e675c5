// Package run is `weave start-work`: one run of a plan, from the project
// lock to the last tick (StartWork).
//
// # What a run guarantees
//
//   - One run drives a project at a time: the run holds the project's lock
//     (plans.Store.Lock) from before it reads the work state to its end; a
//     second run gets a *plans.LockedError naming the holder. Process
//     groups that a run killed outright left running (.weave/run/) are
//     ended before anything runs again.
//   - The plan is resolved once, and command.execute.before hooks see that
//     resolution: they may refuse the start or point it at another plan.
//     A plan with validation errors does not start.
//   - Tasks run one at a time, in plan order (with one worker, see below). Each task costs two durable
//     writes: state.json records the task in flight before it runs, and its
//     checkbox is patched in the plan file after. A task is ticked only
//     through the tool door's Tick (host/tools), which the agent reaches
//     with plan_check and the run confirms; a task the agent says is done
//     but did not tick is not done.
//   - A task that fails is retried (runbook.retries) after a backoff
//     (RetryBackoff), unless a hook blocked it or it needs a model and none
//     is configured; then the plan pauses with the error in state.json.
//   - Cancelling the context pauses the run: the running block's process
//     group is stopped, state.json says paused, and the next run resumes at
//     the first unchecked task, the one in flight included. A finished plan
//     leaves no state.json behind; its checkboxes are the record.
//   - With Options.Budget, a task whose model call the model door refused
//     because it could cross a budget (package budget) pauses the plan,
//     never fails or retries it; state.json keeps what the run, the plan and
//     each task spent, the budgets the run started with and a person's
//     raises, so a resumed run goes on from them (budget.go).
//   - The run's hook events are fired by the runner alone, each from one
//     place (IsRunEvent lists them with the tool events of the calls its
//     tasks make); a hook's failure is logged and never fails the run,
//     unless its failure policy is closed (Options.Halted).
//   - The Observer receives the run's events (Event) in order, and the run
//     waits for it; LoopObserver publishes them as loop events (STATE, DONE,
//     ABORT, ANCHOR) and a failed publish never stops the run.
//
// # A run with workers (run.workers above 1)
//
//   - With one worker the run is the one above, untouched: no git is asked
//     anything. Above one, the run is refused (*WorkersRefusedError) outside
//     the top of a git repository, on a detached HEAD, and with uncommitted
//     changes to files the plan's open tasks touch.
//   - The coordinator (parallel.go) is one goroutine: it alone holds the
//     lock, writes state.json, ticks the project's plan and calls the
//     Observer (worker output included, one event at a time). It hands the
//     tasks plans.Ready says may start to free workers (Worker), at most
//     run.workers at once.
//   - A local worker (localworker.go) works in its own worktree, with tools
//     rooted there (tools.Tools.At): the gate and the sandbox confine its
//     blocks' and its agent's calls to it. Its plan_check claims
//     (tools.Handed.Claim) and ticks nothing; its task ends as one commit on
//     the task's branch, whose parent is the integration head it started
//     from, with the task's trailers.
//   - Landing (land.go) takes the commits waiting in queue as one batch
//     (at most one per worker), in order: each commit is put on the one
//     before in the object store, and its task's verify blocks run on that
//     tree, its own landed tree. The branch then moves once, to the last
//     (compare-and-swap), the boxes are ticked through the tick door with
//     one write of the plan, then state.json once for them. A conflict or
//     a failing verify leaves that task out, unticked (those after it land
//     on the one before it): it runs again on the new head
//     (runbook.retries), then the plan pauses with a *LandError naming the
//     task, files and failure.
//   - state.json records a task running before its worker starts and its
//     commit once made; the next start settles what a dead run left
//     (recover.go): no task ticked without its landed verify, no commit
//     landed twice, no committed work lost.
package run
