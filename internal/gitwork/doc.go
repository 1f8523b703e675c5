// Package gitwork is what a run of parallel tasks asks of git: worktrees
// on branches of their own, one commit per task with its trailers, landing
// a task's commit onto the run's integration branch, reverting it, and
// carrying commits to another machine as bundles.
//
// # What it guarantees
//
//   - Every call runs the git the user has, in the repository's own
//     environment (no GIT_* variable of the caller leaks in), bounded by its
//     context; a failure says what git said.
//   - Landing and reverting never touch a working tree: the new tree is
//     merged in the object store (git merge-tree --write-tree) and the
//     commit is made from it (git commit-tree), so that the integration
//     branch moves only through UpdateRef, a compare-and-swap: two writers
//     cannot both move it from the same commit.
//   - When the task's change and what landed since its base touch
//     different paths, on objects read here (loose, or whole in a pack),
//     the merge and its commit are made without a git process
//     (treemerge.go, landcommit.go): the same tree git merge-tree gives
//     and the same commit git commit-tree writes. Anything this cannot be
//     sure of (a path both sides changed, a possible rename, a tree stored
//     as a delta, replace refs, a
//     config asking for signing, another encoding, shared permissions or
//     another hash) is git's, as before.
//   - A task's commit is written without git commit once git add staged
//     its work (taskcommit.go): the trees of the worktree's index (version
//     2 or 3, nothing but stage-0 entries), the commit with the author and
//     committer git would use, the branch moved from its parent by
//     compare-and-swap. Every object a new tree names is one the parent's
//     tree holds at that path, or one stored loose or in a pack read here:
//     a tree naming an object
//     the repository lacks is never written, as git commit refuses it.
//     Anything git commit would do more (a hook it runs, a message
//     cleanup other than its default, signing, another encoding) is git's.
//   - A reused worktree is reset by git checkout, and cleaned by git clean
//     -d -x only when something untracked is there (clean.go): it is read
//     against its index first. The files the caller keeps
//     (ResetWorktreeKeeping) are never removed; the caller checks them.
//   - A conflict is a *ConflictError naming the files, never a half-merged
//     tree.
//   - A task's commit carries trailers (Weave-Plan, Weave-Task,
//     Weave-Session, Weave-Attempt) that Landed reads back, so that a run
//     can tell after a crash which tasks are on the branch already.
//   - Paths under .weave/ never enter a task's commit: they are the host's.
//   - A few answers are read from the files git keeps instead of asked of a
//     git process (a worktree's .git file, its HEAD, a loose branch ref, an
//     object, loose or stored whole in a pack, checked against its name),
//     and only when the file says exactly what git writes there; anything
//     else (a packed or reftable ref, a detached HEAD, an object stored as
//     a delta or in a large pack, a commit message
//     whose trailers git might read otherwise) is asked of git. A task
//     costs processes, and a run's tasks are many.
//   - A branch (refs/heads/, a plain name) moves as git's files backend
//     moves it, without git, when the config asks for nothing else and
//     git would write the same (refwrite.go): under its lock file, its
//     value checked again there, the lock renamed into place, its reflog
//     line (and HEAD's, when the worktree is on it) appended. A packed
//     branch, a name that would clash with a packed one, a lock held, or
//     any config git reads for refs (another backend, reflog rule or lock
//     timeout) leaves the move to git, as below.
//   - Other refs move (UpdateRef, BranchAt, SetBranch) through a long-lived
//     `git update-ref --stdin` per Repo and reflog message, one
//     transaction at a time: started on first use, ended after two idle
//     seconds, by Repo.Close, or with weave (its stdin ends, and on Linux
//     the parent-death signal). A move is reported only once git said
//     "commit: ok"; a move whose context ends kills the process and is not
//     reported; when the process cannot be had or dies without a word,
//     that move is asked of a one-shot git update-ref.
//   - Code travels between machines as git bundles (Bundle, FetchBundle,
//     UnpackBundle): a bundle names exactly one commit, writing one in
//     checks every object (git's --strict), moves no ref but the one the
//     caller names, runs no hook, and fails when the repository lacks the
//     bundle's basis. A small pack of whole commits, trees and blobs
//     naming only objects of the pack or ones read here is checked and
//     written without git (at least as strictly as unpack-objects
//     --strict: its checksum and count, each object's size, trees' modes
//     and names, commits' heads, every named object there with its
//     type); anything else, or anything this is not sure of, is git's.
//   - The objects written together without git (a bundle's, a landing's
//     trees and commit, a task's) are stored as one pack and its index, in
//     git's formats, rather than a loose file each (packstore.go): two
//     files where a slow file system made each new file count. Past 32
//     small packs, the next one written takes in their objects and they
//     go once it is synced, as git repack replaces packs; within bounds
//     (what one index read here holds, 64 MiB inflated), and never a pack
//     git is told to keep (.keep, .promisor, cruft, bitmap, a multi-pack
//     index, precious objects).
package gitwork
