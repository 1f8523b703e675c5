package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/run/runtest"
)

// These tests are commits that wait to land together: task 1's verify on
// the landed tree holds its landing until tasks 2, 3 and 4 have all handed
// in their commits, which then land as one batch.

// batchPlan is four tasks: 1 whose landing waits for tasks 2, 3 and 4 to
// have handed in their commits, and 2, 3, 4 each making tN.txt, in turn:
// 2 starts once task 1 is landing, 3 once 2 handed in its commit, 4 once 3
// did (the files in dir, made by batchHook). Each later task's verify, on
// the landed tree (the land worktree), checks the tree is its own: what the
// tasks before it made is there, what those after it make is not. verify3
// replaces task 3's verify on the landed tree, and task 4's then checks
// task 3's file is not there.
func batchPlan(dir, verify3 string) string {
	wait := func(name string) string {
		return waitFile(filepath.Join(dir, name))
	}
	var b strings.Builder
	b.WriteString("# Test plan\n\n## TODOs\n\n")
	fmt.Fprintf(&b, "- [ ] 1. One\n  **Files**: `one.txt`\n  ```sh\n  echo 1 > one.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in */land) %s;; esac; test -f one.txt\n  ```\n", wait("committed4"))
	landed := map[int]string{
		2: "test -f one.txt && test ! -f t3.txt && test ! -f t4.txt",
		3: "test -f t2.txt && test ! -f t4.txt",
		4: "test -f t2.txt && test -f t3.txt",
	}
	if verify3 != "" {
		// Task 4 lands on top of 2 when 3 does not land.
		landed[3], landed[4] = verify3, "test -f t2.txt && test ! -f t3.txt"
	}
	after := map[int]string{2: "landing1", 3: "committed2", 4: "committed3"}
	for n := 2; n <= 4; n++ {
		fmt.Fprintf(&b, "- [ ] %d. T%d\n  **Files**: `t%d.txt`\n  ```sh\n  %s; echo %d > t%d.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in */land) %s || exit 1;; esac; test -f t%d.txt\n  ```\n",
			n, n, n, wait(after[n]), n, n, landed[n], n)
	}
	return b.String()
}

// batchProject makes a git project holding plan p on branch main.
func batchProject(t *testing.T, src string) string {
	t.Helper()
	project := runtest.NewProject(t, map[string]string{"p": src})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
		{"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		gitRun(t, project, args...)
	}
	return project
}

// batchHook returns an observer hook that makes the files batchPlan's
// tasks wait for in dir: landing1 once task 1 is landing, committedN once
// task N handed in its commit (it is in the queue once the coordinator
// goes on from that event). also, when set, sees every event after.
func batchHook(t *testing.T, dir string, also func(Event)) func(Event) {
	return func(ev Event) {
		name := ""
		switch {
		case ev.Type == EventTaskLanding && ev.Task == 1:
			name = "landing1"
		case ev.Type == EventTaskCommitted && ev.Task > 1:
			name = fmt.Sprintf("committed%d", ev.Task)
		}
		if name != "" {
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Error(err)
			}
		}
		if also != nil {
			also(ev)
		}
	}
}

func planMarks(t *testing.T, project string) string {
	t.Helper()
	var marks []string
	for _, line := range strings.Split(readPlan(t, project, "p"), "\n") {
		if strings.HasPrefix(line, "- [") {
			marks = append(marks, line[3:4])
		}
	}
	return strings.Join(marks, "")
}

// reflogMoves is how often the run moved the integration branch: its
// reflog's entries after the one that made it.
func reflogMoves(t *testing.T, project string) int {
	t.Helper()
	return len(strings.Split(gitRun(t, project, "reflog", "show", "--format=%H", "refs/heads/weave/p"), "\n")) - 1
}

func batchConfig() *config.Config {
	cfg := config.Default()
	cfg.Run.Workers, cfg.Run.InferDeps = 4, true
	return cfg
}

func TestQueuedCommitsLandTogether(t *testing.T) {
	dir := t.TempDir()
	project := batchProject(t, batchPlan(dir, ""))
	// When task 2 has landed its box is not ticked yet, and when it is
	// done the boxes of 3 and 4 are ticked too: one write ticked them.
	var atLanded, atDone string
	rec := &recorder{}
	rec.hook = batchHook(t, dir, func(ev Event) {
		switch {
		case ev.Type == EventTaskLanded && ev.Task == 2:
			atLanded = planMarks(t, project)
		case ev.Type == EventTaskDone && ev.Task == 2:
			atDone = planMarks(t, project)
		}
	})
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: batchConfig(), Observe: rec.observe})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %v, %v (%v); events %v", res.Status, err, res.Err, rec.types())
	}
	if atLanded != "x   " || atDone != "xxxx" {
		t.Errorf("plan marks when task 2 landed %q, when it was done %q; want %q then %q (2, 3 and 4 ticked at once)", atLanded, atDone, "x   ", "xxxx")
	}
	if got := gitRun(t, project, "log", "--format=%s", "main..weave/p"); got != "T4\nT3\nT2\nOne" {
		t.Errorf("commits on weave/p:\n%s", got)
	}
	if got := reflogMoves(t, project); got != 2 {
		t.Errorf("the run moved weave/p %d times, want 2 (task 1, then 2, 3 and 4 at once)", got)
	}
	// Each task's events in order, with the count of tasks done once it
	// was ticked.
	rec.mu.Lock()
	events := slices.Clone(rec.events)
	rec.mu.Unlock()
	for n := 2; n <= 4; n++ {
		var story []string
		completed := 0
		for _, ev := range events {
			if ev.Task == n && (ev.Type == EventTaskLanding || ev.Type == EventTaskLanded || ev.Type == EventTaskDone) {
				story = append(story, ev.Type)
				if ev.Type == EventTaskDone {
					completed = ev.Completed
				}
			}
		}
		if want := []string{EventTaskLanding, EventTaskLanded, EventTaskDone}; !slices.Equal(story, want) || completed != n {
			t.Errorf("task %d: events %v, completed %d; want %v, completed %d", n, story, completed, want, n)
		}
	}
}

// A task in the middle of a batch whose verify fails on its landed tree is
// not ticked and goes back (here it has no attempt left: the plan pauses
// naming it); the one before it lands and is ticked, the one after it lands
// on top of the one before, in the same move of the branch.
func TestABatchLandsAroundATaskWhoseVerifyFails(t *testing.T) {
	dir := t.TempDir()
	project := batchProject(t, batchPlan(dir, "false"))
	cfg := batchConfig()
	cfg.Runbook.Retries = 0
	rec := &recorder{}
	rec.hook = batchHook(t, dir, nil)
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg, Observe: rec.observe})
	var le *LandError
	if err != nil || res.Status != StatusPaused || !errors.As(res.Err, &le) || !strings.HasPrefix(le.Task, "3 ") {
		t.Fatalf("StartWork = %v, %v (%v), want a pause naming task 3; events %v", res.Status, err, res.Err, rec.types())
	}
	if got := planMarks(t, project); got != "xx x" {
		t.Errorf("plan marks %q, want 1, 2 and 4 ticked, not 3", got)
	}
	if got := gitRun(t, project, "log", "--format=%s", "main..weave/p"); got != "T4\nT2\nOne" {
		t.Errorf("commits on weave/p:\n%s\nwant T4, T2, One", got)
	}
	if got := reflogMoves(t, project); got != 2 {
		t.Errorf("the run moved weave/p %d times, want 2", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, ev := range rec.events {
		if ev.Type == EventTaskConflict && ev.Task != 3 || ev.Task == 3 && (ev.Type == EventTaskLanded || ev.Type == EventTaskDone) {
			t.Errorf("task %d got %s, want only task 3 neither landed nor done", ev.Task, ev.Type)
		}
	}
}

// batchCrashEnv names the project a helper process runs the batch plan in,
// and the directory of its files queued and stopped: it stops for good
// once the batch is on the branch.
const batchCrashEnv = "WEAVE_TEST_BATCH_CRASH"

// TestBatchCrashHelper is the run the next test kills: it blocks in the
// first task.landed event of the batch, after the branch moved and before
// any box of the batch is ticked.
func TestBatchCrashHelper(t *testing.T) {
	project, dir, ok := strings.Cut(os.Getenv(batchCrashEnv), string(os.PathListSeparator))
	if !ok {
		t.Skip("run by TestACrashAfterABatchMovedTheBranch")
	}
	rec := &recorder{}
	rec.hook = batchHook(t, dir, func(ev Event) {
		if ev.Type == EventTaskLanded && ev.Task != 1 {
			if err := os.WriteFile(filepath.Join(dir, "stopped"), nil, 0o644); err != nil {
				t.Error(err)
			}
			select {}
		}
	})
	_, _ = StartWork(context.Background(), Options{Project: project, Name: "p", Config: batchConfig(), Observe: rec.observe})
	t.Fatal("the run ended, want it killed")
}

// A run killed (SIGKILL) after a batch moved the branch and before its
// boxes were ticked: the next start verifies each of the batch's tasks on
// its landed tree again and ticks it; none lands twice.
func TestACrashAfterABatchMovedTheBranch(t *testing.T) {
	dir := t.TempDir()
	// The verify of each task on the landed tree counts its runs.
	verifies := filepath.Join(dir, "verifies")
	src := strings.ReplaceAll(batchPlan(dir, ""), "case \"$PWD\" in */land) ", "case \"$PWD\" in */land) echo . >> "+verifies+"; ")
	project := batchProject(t, src)
	killAfterBatch(t, project, dir)
	if got := planMarks(t, project); got != "x   " {
		t.Fatalf("plan marks when the run was killed %q, want only task 1 ticked", got)
	}
	before := countLines(t, verifies)
	rec := &recorder{}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: batchConfig(), Observe: rec.observe})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %v, %v (%v); events %v", res.Status, err, res.Err, rec.types())
	}
	if got := planMarks(t, project); got != "xxxx" {
		t.Errorf("plan marks %q, want all ticked", got)
	}
	if got := gitRun(t, project, "log", "--format=%s", "main..weave/p"); got != "T4\nT3\nT2\nOne" {
		t.Errorf("commits on weave/p after the resume:\n%s\nwant each once", got)
	}
	if got := countLines(t, verifies) - before; got != 3 {
		t.Errorf("%d verify runs on the landed tree on resume, want 3 (tasks 2, 3 and 4 again)", got)
	}
}

// killAfterBatch runs TestBatchCrashHelper on project and kills it
// (SIGKILL) once the batch of 2, 3 and 4 moved the branch, before any of
// their boxes is ticked.
func killAfterBatch(t *testing.T, project, dir string) {
	t.Helper()
	killAfterBatchOf(t, project, dir, "T4\nT3\nT2\nOne")
}

// killAfterBatchOf is killAfterBatch for a batch that leaves the commits
// want (git log's subjects, newest first) on the branch.
func killAfterBatchOf(t *testing.T, project, dir, want string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestBatchCrashHelper$", "-test.v", "-test.timeout", "5m")
	cmd.Env = append(os.Environ(), batchCrashEnv+"="+project+string(os.PathListSeparator)+dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	guard := time.After(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, "stopped")); err == nil {
			break
		}
		select {
		case err := <-ended:
			t.Fatalf("the run ended before its batch landed: %v\n%s", err, out.String())
		case <-guard:
			_ = cmd.Process.Kill()
			<-ended
			t.Fatalf("the batch did not land\n%s", out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ended
	if got := gitRun(t, project, "log", "--format=%s", "main..weave/p"); got != want {
		t.Fatalf("commits on weave/p when the run was killed:\n%s\nwant:\n%s", got, want)
	}
}

// A run killed after a batch moved the branch, and task 2's verify fails on
// its landed tree when the next start settles the batch: task 2 is
// reverted, and then tasks 3 and 4, whose landed trees held task 2's work,
// are verified on the branch as it now is, without it, where they fail
// (task 3's verify needs task 2's file): they are reverted too, none is
// ticked, and the plan pauses.
func TestResumeVerifiesTheRestOfABatchOnTheBranchOnceATaskIsReverted(t *testing.T) {
	dir := t.TempDir()
	ok2 := filepath.Join(dir, "ok2")
	if err := os.WriteFile(ok2, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(batchPlan(dir, ""), "*/land) test -f one.txt && test ! -f t3.txt", "*/land) test -e "+ok2+" && test -f one.txt && test ! -f t3.txt", 1)
	project := batchProject(t, src)
	killAfterBatch(t, project, dir)
	if err := os.Remove(ok2); err != nil {
		t.Fatal(err)
	}
	cfg := batchConfig()
	cfg.Runbook.Retries = 0
	rec := &recorder{}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg, Observe: rec.observe})
	if err != nil || res.Status != StatusPaused {
		t.Errorf("StartWork = %v, %v (%v), want a pause", res.Status, err, res.Err)
	}
	if got := planMarks(t, project); got != "x   " {
		t.Errorf("plan marks %q, want only task 1 ticked (weave/p holds %q)", got, gitRun(t, project, "ls-tree", "--name-only", "weave/p"))
	}
	if got, want := gitRun(t, project, "log", "--format=%s", "main..weave/p"), "Revert \"T4\"\nRevert \"T3\"\nRevert \"T2\"\nT4\nT3\nT2\nOne"; got != want {
		t.Errorf("commits on weave/p:\n%s\nwant:\n%s", got, want)
	}
}

// A batch lands tasks 2, 4 and 3, in that order (4 finished before 3),
// and the run is killed before their ticks; on the next start task 4's
// verify fails. The landed tasks are settled in the branch's order, not
// their numbers': 2, then 4, reverted, then 3, whose landed tree held task
// 4's work and whose verify needs it, verified on the branch as it now is:
// it fails there and is reverted too, not ticked.
func TestResumeSettlesABatchInTheBranchsOrder(t *testing.T) {
	dir := t.TempDir()
	ok4 := filepath.Join(dir, "ok4")
	if err := os.WriteFile(ok4, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wait := func(name string) string {
		return waitFile(filepath.Join(dir, name))
	}
	var b strings.Builder
	b.WriteString("# Test plan\n\n## TODOs\n\n")
	fmt.Fprintf(&b, "- [ ] 1. One\n  **Files**: `one.txt`\n  ```sh\n  echo 1 > one.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in */land) %s;; esac; test -f one.txt\n  ```\n", wait("committed3"))
	after := map[int]string{2: "landing1", 3: "committed4", 4: "committed2"}
	landed := map[int]string{2: "test -f one.txt", 3: "test -f t4.txt", 4: "test -e " + ok4 + " && test ! -f t3.txt"}
	for n := 2; n <= 4; n++ {
		fmt.Fprintf(&b, "- [ ] %d. T%d\n  **Files**: `t%d.txt`\n  ```sh\n  %s; echo %d > t%d.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in */land) %s || exit 1;; esac; test -f t%d.txt\n  ```\n",
			n, n, n, wait(after[n]), n, n, landed[n], n)
	}
	project := batchProject(t, b.String())
	killAfterBatchOf(t, project, dir, "T3\nT4\nT2\nOne")
	if err := os.Remove(ok4); err != nil {
		t.Fatal(err)
	}
	cfg := batchConfig()
	cfg.Runbook.Retries = 0
	rec := &recorder{}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg, Observe: rec.observe})
	if err != nil || res.Status != StatusPaused {
		t.Errorf("StartWork = %v, %v (%v), want a pause", res.Status, err, res.Err)
	}
	if got := planMarks(t, project); got != "xx  " {
		t.Errorf("plan marks %q, want tasks 1 and 2 ticked (weave/p holds %q)", got, gitRun(t, project, "ls-tree", "--name-only", "weave/p"))
	}
	if got, want := gitRun(t, project, "log", "--format=%s", "-3", "weave/p"), "Revert \"T3\"\nRevert \"T4\"\nT3"; got != want {
		t.Errorf("last commits on weave/p:\n%s\nwant:\n%s", got, want)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), ".\n")
}

// A person's git moves the branch while a batch lands (task 4's verify on
// its landed tree does it, once): the move of the batch finds the branch
// moved, and the whole batch lands again on where it is now, each task
// verified again on its new landed tree; the person's commit stays.
func TestABatchLandsAgainOnABranchSomeoneMoved(t *testing.T) {
	dir := t.TempDir()
	verifies, moved := filepath.Join(dir, "verifies"), filepath.Join(dir, "moved")
	move := `if [ ! -e ` + moved + ` ]; then touch ` + moved + `; old=$(git rev-parse refs/heads/weave/p) && c=$(git commit-tree -p "$old" -m "A person's commit" "$old^{tree}") && git update-ref refs/heads/weave/p "$c" "$old" || exit 9; fi; `
	src := strings.ReplaceAll(batchPlan(dir, ""), "case \"$PWD\" in */land) ", "case \"$PWD\" in */land) echo . >> "+verifies+"; ")
	src = strings.Replace(src, "*/land) echo . >> "+verifies+"; test -f t2.txt && test -f t3.txt", "*/land) echo . >> "+verifies+"; "+move+"test -f t2.txt && test -f t3.txt", 1)
	project := batchProject(t, src)
	rec := &recorder{}
	rec.hook = batchHook(t, dir, nil)
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: batchConfig(), Observe: rec.observe})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %v, %v (%v); events %v", res.Status, err, res.Err, rec.types())
	}
	if _, err := os.Stat(moved); err != nil {
		t.Fatalf("the branch was not moved: %v", err)
	}
	if got := gitRun(t, project, "log", "--format=%s", "main..weave/p"); got != "T4\nT3\nT2\nA person's commit\nOne" {
		t.Errorf("commits on weave/p:\n%s\nwant the batch on top of the person's commit", got)
	}
	if got := countLines(t, verifies); got != 7 {
		t.Errorf("%d verify runs on a landed tree, want 7 (task 1, then 2, 3 and 4 twice)", got)
	}
	if got := planMarks(t, project); got != "xxxx" {
		t.Errorf("plan marks %q, want all ticked", got)
	}
}

// Task 2's verify on its landed tree moves the branch to that landed
// commit, in the middle of the batch (git update-ref in the land
// worktree), or to a person's commit on top of it: the batch's move finds
// the branch moved to where it holds a commit of the batch. Task 2 counts
// as landed there and is not landed again; tasks 3 and 4 land again on
// the branch as it is. Each task's commit is on the branch once, and all
// are ticked.
func TestABatchFindingTheBranchAtItsOwnLandedCommitLandsNothingTwice(t *testing.T) {
	for _, tc := range []struct {
		name, to, commits string
	}{
		{"at", "HEAD", "T4\nT3\nT2\nOne"},
		{"above", `$(git commit-tree -p HEAD -m "A person's commit" "HEAD^{tree}")`, "T4\nT3\nA person's commit\nT2\nOne"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			guard := filepath.Join(dir, "guard")
			move := `if [ ! -e ` + guard + ` ]; then touch ` + guard + `; git update-ref refs/heads/weave/p ` + tc.to + ` || exit 9; fi; `
			src := strings.Replace(batchPlan(dir, ""), "*/land) test -f one.txt && test ! -f t3.txt", "*/land) "+move+"test -f one.txt && test ! -f t3.txt", 1)
			project := batchProject(t, src)
			rec := &recorder{}
			rec.hook = batchHook(t, dir, nil)
			res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: batchConfig(), Observe: rec.observe})
			if err != nil || res.Status != StatusDone {
				t.Fatalf("StartWork = %v, %v (%v); events %v", res.Status, err, res.Err, rec.types())
			}
			if _, err := os.Stat(guard); err != nil {
				t.Fatalf("the branch was not moved: %v", err)
			}
			if got := gitRun(t, project, "log", "--format=%s", "main..weave/p"); got != tc.commits {
				t.Errorf("commits on weave/p:\n%s\nwant:\n%s", got, tc.commits)
			}
			if got := planMarks(t, project); got != "xxxx" {
				t.Errorf("plan marks %q, want all ticked", got)
			}
		})
	}
}

// The boxes of a batch cannot be ticked: a person removed the plan file,
// or every task in it, while the batch landed (after task 2 landed, before
// the ticks). No box is ticked, and the run stops without blaming task 2,
// the first of the batch, for what is no task's failure: the error says
// what happened (the tasks removed are named by it).
func TestABatchWhoseTickFailsBlamesNoTaskOfIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(path string) error
		want string
	}{
		{"file removed", os.Remove, "no such file"},
		{"tasks removed", func(path string) error { return os.WriteFile(path, []byte("# P\n\nNothing left.\n"), 0o644) },
			"task 1 (One), task 2 (T2), task 3 (T3), task 4 (T4) of p were removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			project := batchProject(t, batchPlan(dir, ""))
			path := filepath.Join(project, ".weave", "plans", "p.md")
			edited := false
			rec := &recorder{}
			rec.hook = batchHook(t, dir, func(ev Event) {
				if ev.Type == EventTaskLanded && ev.Task == 2 && !edited {
					edited = true
					if err := tc.edit(path); err != nil {
						t.Error(err)
					}
				}
			})
			res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: batchConfig(), Observe: rec.observe})
			if err != nil || res.Status != StatusFailed || res.Err == nil {
				t.Fatalf("StartWork = %v, %v (%v), want the run stopped", res.Status, err, res.Err)
			}
			if msg := res.Err.Error(); strings.HasPrefix(msg, "task ") && strings.Contains(msg, " failed: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want no task blamed, and %q", msg, tc.want)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for _, ev := range rec.events {
				if ev.Type == EventPlanPaused && ev.Task != 0 {
					t.Errorf("plan.paused names task %d, want none", ev.Task)
				}
			}
		})
	}
}
