package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus/bustest"
)

// gitCalls counts the git processes logged by gitCounter, by subcommand.
func gitCalls(t *testing.T, log string) (int, map[string]int) {
	t.Helper()
	calls := strings.Split(strings.TrimSpace(readFile(t, log)), "\n")
	counts := map[string]int{}
	for _, c := range calls {
		f := strings.Fields(c)
		for len(f) > 0 && (f[0] == "-c" || strings.Contains(f[0], "=")) {
			f = f[1:]
		}
		if len(f) > 0 {
			counts[f[0]]++
		}
	}
	return len(calls), counts
}

// TestRemoteGitProcessesPerTask runs twelve independent one-line tasks
// that only two `weave worker` processes can take, over an embedded
// nats-server, and counts the git processes the coordinator and the
// workers started. A task costs, on its worker, the base's new commits
// written in (when another task landed since its last), its worktree's
// reset, its commit and its result's bundle; on the coordinator, the base
// bundled for the worker, the result written in and checked, and the
// landing. (It cost some nineteen before: whole histories fetched, the
// base asked of git again and again, three git processes to add the work
// where one does, the result's commit read twice.)
func TestRemoteGitProcessesPerTask(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	const tasks = 12
	var sb strings.Builder
	sb.WriteString("# Cost\n\n## TODOs\n\n")
	for i := 1; i <= tasks; i++ {
		fmt.Fprintf(&sb, "- [ ] %d. Write %d [needs: far]\n  **Files**: `out/t%d.txt` (new)\n  ```sh\n  mkdir -p out && echo %d > out/t%d.txt\n  ```\n", i, i, i, i, i)
	}
	wenv, wlog := gitCounter(t, append(cleanEnv(t), "WEAVE_SANDBOX_MODE=off"))
	for _, name := range []string{"far1", "far2"} {
		startWorkerEnv(t, wenv, url, name, "--labels", "far", "--slots", "2")
	}
	// What the workers did to join is not the tasks'.
	joined, _ := gitCalls(t, wlog)
	// The project ignores .weave/, as many do.
	dir := workersRepo(t, map[string]string{"cost": sb.String()}, map[string]string{".gitignore": "/.weave/\n"})
	env, clog := gitCounter(t, cleanEnv(t))
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "cost", "--workers", "4", "--bus", url, "--infer-deps")
	if code != 0 {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := gitIn(t, dir, "rev-list", "--count", "main..weave/cost"); got != fmt.Sprint(tasks) {
		t.Fatalf("%s commits on weave/cost, want %d", got, tasks)
	}
	cn, cc := gitCalls(t, clog)
	wn, wc := gitCalls(t, wlog)
	wn -= joined
	t.Logf("%d git processes for %d tasks: coordinator %d %v, workers %d %v", cn+wn, tasks, cn, cc, wn, wc)
	// Per task: on its worker the worktree's checkout and git add (the
	// commit and the result's pack are made without git, and the base's
	// new commits, whole objects over loose ones, are written in without
	// git too); on the coordinator nothing: the result's objects are
	// checked and written without git. The coordinator packs the base's
	// new commits, reads the result's commit, and merges and writes the
	// landed commit without git (the tasks change different files); it
	// moves the task's branch and the integration branch as git's files
	// backend does, without git (it asks git once per repository what
	// its config allows). Each worker makes its worktrees once,
	// and the run's start and finish are shared by all its tasks. A worker
	// writes the task's commit from the index git add staged, and cleans
	// its worktree only when a task left something untracked there
	// besides the plan's copy, which it keeps: these tasks leave nothing.
	// Measured: 166 and 80 of them the coordinator's at first, 105 and 33
	// once the landings were made without git, 90 and 22 once the results
	// were unpacked without git, 72 and 22 once the workers committed and
	// cleaned without git too, 71 and 23 once the branches moved without
	// git (no update-ref; the config, the committer and the author read
	// once by each repository the coordinator opens).
	if cc["unpack-objects"] > 0 {
		t.Errorf("the tasks' results were unpacked by git %d times, want none", cc["unpack-objects"])
	}
	if cc["merge-tree"]+cc["commit-tree"] > 0 {
		t.Errorf("landings of tasks that changed different files ran git merge-tree %d times and commit-tree %d times, want none", cc["merge-tree"], cc["commit-tree"])
	}
	// One update-ref deletes the task branches once the plan is done.
	if cc["update-ref"] > 1 {
		t.Errorf("the coordinator moved branches through git update-ref %d times, want one (the task branches deleted at the end)", cc["update-ref"])
	}
	if wc["commit"]+wc["clean"] > 0 {
		t.Errorf("the workers ran git commit %d times and git clean %d times for tasks that leave nothing untracked, want none", wc["commit"], wc["clean"])
	}
	const perTask, shared = 5, 22
	if cn+wn > perTask*tasks+shared {
		t.Errorf("%d git processes for %d tasks, want at most %d per task and %d for the run", cn+wn, tasks, perTask, shared)
	}
}

// TestRemoteWorktreeLeftClean: a task on a `weave worker` litters its
// worktree (an ignored file, files under .weave/, its copy of the plan
// changed); the next task in the same slot, which the worker no longer
// cleans with git when nothing is left, finds none of it and the plan as
// the coordinator sent it.
func TestRemoteWorktreeLeftClean(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	plan := "# Litter\n\n## TODOs\n\n" +
		"- [ ] 1. Leave litter [needs: far]\n  **Files**: `one.txt` (new)\n  ```sh\n  echo litter > litter.log && mkdir -p .weave/junk && echo j > .weave/junk/f && echo x > .weave/plans/other.md && echo TAMPER$((1+1)) >> .weave/plans/litter.md && echo 1 > one.txt\n  ```\n" +
		"- [ ] 2. Find none of it [needs: far]\n  **Files**: `one.txt`\n  ```sh\n  for f in litter.log .weave/junk .weave/plans/other.md; do if test -e $f; then echo left: $f; exit 1; fi; done\n  if grep -q TAMPER$((1+1)) .weave/plans/litter.md; then echo the plan as the last task left it; exit 1; fi\n  grep -q 'Find none of it' .weave/plans/litter.md\n  echo 2 >> one.txt\n  ```\n" +
		"- [ ] 3. Stand apart [needs: far]\n  **Files**: `three.txt` (new)\n  ```sh\n  echo 3 > three.txt\n  ```\n"
	startWorkerEnv(t, append(cleanEnv(t), "WEAVE_SANDBOX_MODE=off"), url, "far1", "--labels", "far", "--slots", "1")
	dir := workersRepo(t, map[string]string{"litter": plan}, map[string]string{".gitignore": "/.weave/\n*.log\n"})
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "litter", "--workers", "2", "--bus", url, "--infer-deps")
	if code != 0 {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := gitIn(t, dir, "rev-list", "--count", "main..weave/litter"); got != "3" {
		t.Fatalf("%s commits on weave/litter, want 3", got)
	}
	if files := gitIn(t, dir, "ls-tree", "-r", "--name-only", "weave/litter"); strings.Contains(files, "litter.log") || strings.Contains(files, ".weave") {
		t.Fatalf("files landed: %s", files)
	}
}
