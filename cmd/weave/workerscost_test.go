package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/gitwork"
)

// The cost of a task of a run with workers, counted in git processes (what
// a task pays on a busy machine is mostly processes started), and the
// integration head the coordinator keeps instead of asking git for it:
// when someone else moves the branch during the run, the landing finds out
// and lands on where the branch is.

// gitCounter puts a git in front of the real one on PATH that writes a
// line per call to the file it returns, and returns the environment with
// it.
func gitCounter(t *testing.T, env []string) ([]string, string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "git.log")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nexec %q \"$@\"\n", log, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return append(out, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")), log
}

// TestWorkersGitProcessesPerTask runs twelve independent one-line tasks on
// three workers and counts the git processes weave started: a task costs
// its worktree's reset, its commit and its landing, and little else (the
// run's start and end are shared by all its tasks).
func TestWorkersGitProcessesPerTask(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	const tasks = 12
	var sb strings.Builder
	sb.WriteString("# Cost\n\n## TODOs\n\n")
	for i := 1; i <= tasks; i++ {
		fmt.Fprintf(&sb, "- [ ] %d. Write %d\n  **Files**: `out/t%d.txt` (new)\n  ```sh\n  mkdir -p out && echo %d > out/t%d.txt\n  ```\n", i, i, i, i, i)
	}
	dir := workersRepo(t, map[string]string{"cost": sb.String()}, nil)
	env, log := gitCounter(t, cleanEnv(t))
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "cost", "--workers", "3", "--infer-deps")
	if code != 0 {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := gitIn(t, dir, "rev-list", "--count", "main..weave/cost"); got != fmt.Sprint(tasks) {
		t.Fatalf("%s commits on weave/cost, want %d", got, tasks)
	}
	calls, counts := gitCalls(t, log)
	t.Logf("%d git processes for %d tasks: %v", calls, tasks, counts)
	// Per task: the worktree reset (checkout; git clean only when a task
	// left something untracked, which these do not), the commit (git add;
	// the commit is written from the index without git) and the landing
	// (update-ref: the merge and its commit are made without git for
	// tasks that change different files); the run's own start and finish,
	// and each worker's worktree made once, are some thirty more. (A run
	// used eighteen per task before, eight before landings ran no
	// merge-tree and commit-tree, five before commits and cleans ran no
	// git.)
	if counts["merge-tree"]+counts["commit-tree"] > 0 {
		t.Errorf("landings of tasks that changed different files ran git merge-tree %d times and commit-tree %d times, want none", counts["merge-tree"], counts["commit-tree"])
	}
	if counts["commit"]+counts["clean"] > 0 {
		t.Errorf("the workers ran git commit %d times and git clean %d times for tasks that leave nothing untracked, want none", counts["commit"], counts["clean"])
	}
	const perTask, shared = 4, 40
	if calls > perTask*tasks+shared {
		t.Errorf("%d git processes for %d tasks, want at most %d per task and %d for the run: %v", calls, tasks, perTask, shared, counts)
	}
}

// TestWorkersBranchMovedDuringRun is a task whose block moves the
// integration branch itself, as a person's git could while the run goes
// on: the coordinator, which moves the branch by compare-and-swap from the
// head it knows, is told so by the swap failing and lands the task on
// where the branch is now; the person's commit stays, every task is one
// commit on the branch, and every task is ticked.
func TestWorkersBranchMovedDuringRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	// The person's git moves the branch by compare-and-swap too, so that
	// it never drops a task the run landed meanwhile.
	move := `i=0; until old=$(git rev-parse refs/heads/weave/moved) && c=$(git commit-tree -p "$old" -m "A person's commit" "$old^{tree}") && git update-ref refs/heads/weave/moved "$c" "$old"; do i=$((i+1)); [ $i -lt 100 ] || exit 9; done`
	plan := "# Moved\n\n## TODOs\n\n" +
		"- [ ] 1. Move\n  **Files**: `a.txt`\n  ```sh\n  " + move + "\n  echo a > a.txt\n  ```\n" +
		"- [ ] 2. Write b\n  **Files**: `b.txt`\n  ```sh\n  echo b > b.txt\n  ```\n" +
		"- [ ] 3. Write c\n  **Files**: `c.txt`\n  ```sh\n  echo c > c.txt\n  ```\n  ```sh verify\n  test -f c.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"moved": plan}, nil)
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "moved", "--workers", "2", "--infer-deps")
	if code != 0 {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if p := planOf(t, dir, "moved"); strings.Count(p, "- [x]") != 3 {
		t.Errorf("plan:\n%s\nwant 3 ticks", p)
	}
	if got := gitIn(t, dir, "log", "--format=%s", "main..weave/moved"); strings.Count(got, "A person's commit") != 1 {
		t.Errorf("commits on weave/moved:\n%s\nwant the person's commit kept", got)
	}
	repo, err := gitwork.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := repo.TaskCommits(t.Context(), "refs/heads/weave/moved", "main", "moved")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, c := range list {
		seen[c.Task]++
	}
	for i := 1; i <= 3; i++ {
		if seen[i] != 1 {
			t.Errorf("task %d has %d commits on weave/moved, want 1", i, seen[i])
		}
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if got := gitIn(t, dir, "show", "weave/moved:"+f); got != strings.TrimSuffix(f, ".txt") {
			t.Errorf("%s on weave/moved = %q", f, got)
		}
	}
}
