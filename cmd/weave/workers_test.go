package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/sandbox"
)

// These tests run `weave start-work --workers N` as a process on a git
// repository: tasks carried out at once in worktrees of their own, landed
// one at a time on weave/<plan> through their verify blocks, and ticked in
// the project's plan only then. Before the workers, --workers was an
// unknown flag and every one of them failed.

// workersRepo is a project with plans, made a git repository on branch main
// with everything committed, plus files.
func workersRepo(t *testing.T, planFiles, files map[string]string) string {
	t.Helper()
	dir := project(t, planFiles)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
		{"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		gitIn(t, dir, args...)
	}
	return dir
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// waitBoth is a block's wait for the other task of a pair to have started
// (its marker in dir), so that the two are known to run at once; the loop's
// bound is a failure guard (a minute), never a timing.
func waitBoth(dir string, me, other int) string {
	return fmt.Sprintf(`touch %[1]s/started-%[2]d; i=0; until [ -e %[1]s/started-%[3]d ]; do i=$((i+1)); [ $i -lt 1200 ] || exit 9; sleep 0.05; done`, dir, me, other)
}

func events(t *testing.T, out string) []run.Event {
	t.Helper()
	var evs []run.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev run.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON event: %q", line)
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestWorkersRunReadyTasksAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	m := t.TempDir()
	log := filepath.Join(m, "log")
	plan := "# Par\n\n## TODOs\n\n" +
		fmt.Sprintf("- [ ] 1. One\n  ```sh\n  echo start 1 >> %[1]s; %[2]s; echo one > one.txt; echo end 1 >> %[1]s\n  ```\n  ```sh verify\n  test -f one.txt\n  ```\n", log, waitBoth(m, 1, 2)) +
		fmt.Sprintf("- [ ] 2. Two\n  ```sh\n  echo start 2 >> %[1]s; %[2]s; echo two > two.txt; echo end 2 >> %[1]s\n  ```\n", log, waitBoth(m, 2, 1)) +
		fmt.Sprintf("- [ ] 3. Three [after: 1, 2]\n  ```sh\n  echo start 3 >> %[1]s; cat one.txt two.txt > three.txt; echo end 3 >> %[1]s\n  ```\n  ```sh verify\n  grep -q two three.txt\n  ```\n", log)
	dir := workersRepo(t, map[string]string{"par": plan}, map[string]string{"README": "hi\n"})
	start := gitIn(t, dir, "rev-parse", "HEAD")

	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "par", "--workers", "3", "--json")
	if code != 0 {
		t.Fatalf("start-work --workers 3 = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, log)), "\n")
	at := func(s string) int {
		i := slices.Index(lines, s)
		if i < 0 {
			t.Fatalf("%q not in the tasks' log %q", s, lines)
		}
		return i
	}
	// 1 and 2 ran at once (each waited for the other to start); 3 started
	// only after both had ended.
	if !(at("start 1") < at("end 2") && at("start 2") < at("end 1")) {
		t.Errorf("tasks 1 and 2 did not overlap: %q", lines)
	}
	if at("start 3") < at("end 1") || at("start 3") < at("end 2") {
		t.Errorf("task 3 started before the tasks it depends on ended: %q", lines)
	}
	if p := planOf(t, dir, "par"); strings.Count(p, "- [x]") != 3 {
		t.Errorf("plan after the run:\n%s\nwant 3 ticks", p)
	}
	// The work is on weave/par, one commit per task with its trailers;
	// the person's branch and tree are as they were.
	if got := gitIn(t, dir, "rev-parse", "HEAD"); got != start {
		t.Errorf("HEAD moved from %s to %s", start, got)
	}
	if got := gitIn(t, dir, "log", "--format=%s", "main..weave/par"); strings.Count(got, "\n") != 2 || !strings.HasPrefix(got, "Three") {
		t.Errorf("commits on weave/par:\n%s\nwant one per task, Three last", got)
	}
	if got := gitIn(t, dir, "log", "-1", "--format=%(trailers:key=Weave-Task,valueonly)%(trailers:key=Weave-Plan,valueonly)", "weave/par"); got != "3\npar" {
		t.Errorf("trailers of the last commit: %q", got)
	}
	if got := gitIn(t, dir, "show", "weave/par:three.txt"); got != "one\ntwo" {
		t.Errorf("three.txt on weave/par = %q", got)
	}
	for _, f := range []string{"one.txt", "two.txt", "three.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s is in the main tree; the work belongs on weave/par", f)
		}
	}
	if st := gitIn(t, dir, "status", "--porcelain", "--", ".", ":(exclude).weave"); st != "" {
		t.Errorf("main tree status after the run: %q", st)
	}
	// A finished plan leaves its integration branch, not its workers'
	// worktrees and task branches.
	if got := gitIn(t, dir, "branch", "--list", "weave/par-task-*"); got != "" {
		t.Errorf("task branches left after the plan is done: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".weave", "worktrees", "par")); err == nil {
		t.Error("the workers' worktrees are left after the plan is done")
	}
	if !strings.Contains(errOut, "git merge weave/par") {
		t.Errorf("stderr does not say how to merge weave/par:\n%s", errOut)
	}
	workers := map[int]bool{}
	for _, ev := range events(t, out) {
		if ev.Type == run.EventTaskStarted {
			if ev.Worker == 0 || ev.Branch == "" || ev.BaseRef == "" || !strings.HasPrefix(ev.Worktree, ".weave/worktrees/par/w") {
				t.Errorf("task.started of a worker without where it runs: %+v", ev)
			}
			workers[ev.Worker] = true
		}
	}
	if len(workers) < 2 {
		t.Errorf("tasks ran on workers %v, want two at least", workers)
	}
}

// clash is a plan whose tasks 1 and 2 run at once and change the same line.
func clash(m string) string {
	return "# Clash\n\n## TODOs\n\n" +
		fmt.Sprintf("- [ ] 1. Add A\n  ```sh\n  %s; awk 'NR==2{$0=$0\" A\"}1' a.txt > a.tmp && mv a.tmp a.txt\n  ```\n", waitBoth(m, 1, 2)) +
		fmt.Sprintf("- [ ] 2. Add B\n  ```sh\n  %s; awk 'NR==2{$0=$0\" B\"}1' a.txt > a.tmp && mv a.tmp a.txt\n  ```\n", waitBoth(m, 2, 1)) +
		"- [ ] 3. Both [after: 1, 2]\n  ```sh verify\n  grep -q A a.txt && grep -q B a.txt\n  ```\n"
}

func TestWorkersSameLinesLandOneAfterTheOther(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	t.Run("re-run on the new head", func(t *testing.T) {
		dir := workersRepo(t, map[string]string{"clash": clash(t.TempDir())}, map[string]string{"a.txt": "one\ntwo\nthree\n"})
		code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "clash", "--workers", "2", "--json")
		if code != 0 {
			t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		conflicts := 0
		for _, ev := range events(t, out) {
			if ev.Type == run.EventTaskConflict {
				conflicts++
				if !ev.Retry || !strings.Contains(ev.Error, "a.txt") {
					t.Errorf("task.conflict = %+v, want a retry naming a.txt", ev)
				}
			}
		}
		if conflicts != 1 {
			t.Errorf("%d conflicts, want 1", conflicts)
		}
		if got := gitIn(t, dir, "show", "weave/clash:a.txt"); got != "one\ntwo A B\nthree" && got != "one\ntwo B A\nthree" {
			t.Errorf("a.txt on weave/clash = %q, want both changes", got)
		}
		if p := planOf(t, dir, "clash"); strings.Count(p, "- [x]") != 3 {
			t.Errorf("plan:\n%s\nwant 3 ticks", p)
		}
	})
	t.Run("no retries left: the plan pauses naming it", func(t *testing.T) {
		dir := workersRepo(t, map[string]string{"clash": clash(t.TempDir())}, map[string]string{"a.txt": "one\ntwo\nthree\n"})
		code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "clash", "--workers", "2", "--retries", "0")
		if code != exitPaused || !strings.Contains(errOut, "could not land") || !strings.Contains(errOut, "a.txt") {
			t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s\nwant a pause naming the conflict in a.txt", code, out, errOut)
		}
		var st struct {
			PausedReason string `json:"paused_reason"`
		}
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, ".weave", "state.json"))), &st); err != nil || !strings.Contains(st.PausedReason, "a.txt") {
			t.Errorf("state.json paused_reason = %q (%v), want the conflict", st.PausedReason, err)
		}
		if p := planOf(t, dir, "clash"); strings.Count(p, "- [x]") != 1 {
			t.Errorf("plan:\n%s\nwant only the task that landed ticked", p)
		}
	})
}

func TestWorkersVerifyFailsAfterLanding(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	// Task 2's verify passes on its branch (no x.txt there) and fails on
	// the landed tree, which has task 1's x.txt: task 2 waits for task 1
	// to land first. --infer-deps makes them independent (disjoint Files).
	plan := "# Late\n\n## TODOs\n\n" +
		"- [ ] 1. Make x\n  **Files**: `x.txt`\n  ```sh\n  echo 1 > x.txt\n  ```\n" +
		"- [ ] 2. Make y\n  **Files**: `y.txt`\n  ```sh\n  i=0; until git cat-file -e refs/heads/weave/late:x.txt 2>/dev/null; do i=$((i+1)); [ $i -lt 1200 ] || exit 9; sleep 0.05; done; echo y > y.txt\n  ```\n" +
		"  ```sh verify\n  test ! -e x.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"late": plan}, nil)
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "late", "--workers", "2", "--infer-deps", "--retries", "0")
	if code != exitPaused || !strings.Contains(errOut, "task 2") || !strings.Contains(errOut, "verify") {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s\nwant a pause naming task 2's failing verify", code, out, errOut)
	}
	p := planOf(t, dir, "late")
	if !strings.Contains(p, "- [x] 1.") || !strings.Contains(p, "- [ ] 2.") {
		t.Errorf("plan:\n%s\nwant task 1 ticked, task 2 not", p)
	}
	if _, err := exec.Command("git", "-C", dir, "cat-file", "-e", "weave/late:y.txt").CombinedOutput(); err == nil {
		t.Error("task 2's y.txt landed on weave/late although its verify failed there")
	}
	if got := gitIn(t, dir, "show", "weave/late-task-2:y.txt"); got != "y" {
		t.Errorf("task 2's work on its branch = %q, want kept", got)
	}
}

func TestWorkersRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := "# R\n\n## TODOs\n\n- [ ] 1. Edit a\n  **Files**: `a.txt`\n  ```sh\n  echo A >> a.txt\n  ```\n"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string
		want  []string
	}{
		{"not a git repository", func(t *testing.T) string { return project(t, map[string]string{"r": plan}) },
			[]string{"git repository", "--workers 1"}},
		{"detached HEAD", func(t *testing.T) string {
			dir := workersRepo(t, map[string]string{"r": plan}, map[string]string{"a.txt": "a\n"})
			gitIn(t, dir, "checkout", "-q", "--detach")
			return dir
		}, []string{"HEAD is detached", "git switch", "--workers 1"}},
		{"uncommitted change to a file the plan touches", func(t *testing.T) string {
			dir := workersRepo(t, map[string]string{"r": plan}, map[string]string{"a.txt": "a\n"})
			if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, []string{"uncommitted changes", "a.txt", "commit or stash", "--workers 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "r", "--workers", "2")
			if code != exitUsage {
				t.Fatalf("start-work --workers 2 = %d\nstdout: %s\nstderr: %s\nwant %d", code, out, errOut, exitUsage)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
			if p := planOf(t, dir, "r"); strings.Contains(p, "[x]") {
				t.Error("a refused run ticked a task")
			}
		})
	}
	t.Run("a change to another file is no obstacle", func(t *testing.T) {
		dir := workersRepo(t, map[string]string{"r": plan}, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
		if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "r", "--workers", "2"); code != 0 {
			t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if got := readFile(t, filepath.Join(dir, "b.txt")); got != "mine\n" {
			t.Errorf("b.txt = %q, want the person's change kept", got)
		}
	})
	t.Run("--workers 1 needs no git", func(t *testing.T) {
		dir := project(t, map[string]string{"r": plan})
		if code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "r", "--workers", "1"); code != 0 {
			t.Fatalf("start-work --workers 1 = %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if got := readFile(t, filepath.Join(dir, "a.txt")); got != "A\n" {
			t.Errorf("a.txt = %q, want the task's work in the project", got)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			t.Error("--workers 1 made a git repository")
		}
	})
	t.Run("too many workers", func(t *testing.T) {
		dir := workersRepo(t, map[string]string{"r": plan}, map[string]string{"a.txt": "a\n"})
		code, _, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "r", "--workers", "65")
		if code == 0 || !strings.Contains(errOut, "run.workers") || !strings.Contains(errOut, "64") {
			t.Errorf("start-work --workers 65 = %d, stderr %q; want an error naming run.workers and its limit", code, errOut)
		}
	})
}

// TestWorkersHostileModel is a model, carrying out a task in a worker,
// that tries to write outside its worktree, into the main tree, to tick the
// main plan's checkboxes and another task: each is refused, and only its
// honest work lands.
func TestWorkersHostileModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := "# H\n\n## TODOs\n\n" +
		"- [ ] 1. Write the greeting\n  **What**: greeting.txt says hello.\n  **Files**: `greeting.txt`\n  ```sh verify\n  grep -q hello greeting.txt\n  ```\n" +
		"- [ ] 2. Deploy\n  **Files**: `deployed.txt`\n  ```sh\n  echo deployed > deployed.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"h": plan}, nil)
	planPath := filepath.Join(dir, ".weave", "plans", "h.md")
	ticked := strings.ReplaceAll(plan, "- [ ]", "- [x]")
	sandboxed := sandbox.Probe(t.Context(), bin) == nil
	turns := []modeltest.Turn{
		callOf(t, "write", map[string]any{"path": "../../../../evil.txt", "content": "x"}),
		callOf(t, "write", map[string]any{"path": filepath.Join(dir, "evil.txt"), "content": "x"}),
		callOf(t, "write", map[string]any{"path": planPath, "content": ticked}),
		callOf(t, "plan_check", map[string]any{"plan": "h", "task": 2}),
	}
	if sandboxed {
		turns = append(turns, callOf(t, "bash", map[string]any{"command": fmt.Sprintf("echo x > %s/evil.txt; sed -i 's/- \\[ \\]/- [x]/' %s", dir, planPath)}))
	}
	turns = append(turns,
		callOf(t, "write", map[string]any{"path": "greeting.txt", "content": "hello\n"}),
		callOf(t, "plan_check", map[string]any{"plan": "h", "task": 1}),
		modeltest.Turn{Text: "Done."})
	srv := modeltest.NewServer(t, turns...)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "h", "--workers", "2", "--infer-deps")
	if code != 0 {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "evil.txt")); err == nil {
		t.Error("the model wrote evil.txt into the main tree")
	}
	if _, err := os.Stat(filepath.Join(dir, "greeting.txt")); err == nil {
		t.Error("the model's work is in the main tree; it belongs on weave/h")
	}
	if got := gitIn(t, dir, "show", "weave/h:greeting.txt"); got != "hello" {
		t.Errorf("greeting.txt on weave/h = %q", got)
	}
	if _, err := exec.Command("git", "-C", dir, "cat-file", "-e", "weave/h:evil.txt").CombinedOutput(); err == nil {
		t.Error("evil.txt landed on weave/h")
	}
	res := toolResults(t, srv)
	if len(res) < 4 {
		t.Fatalf("tool results: %q", res)
	}
	// The main plan's write is refused by the hook that guards unread
	// files before the tool's own check of the path would.
	for i, want := range []string{"outside the project", "outside the project", "h.md", "you were handed task 1"} {
		if !strings.Contains(res[i], want) || !(strings.Contains(res[i], "outside") || strings.Contains(res[i], "refused") || strings.Contains(res[i], "blocked")) {
			t.Errorf("result %d = %q, want it refused (%q)", i, res[i], want)
		}
	}
	// In the sandbox, the main tree is out of the worker's bash's reach.
	if sandboxed && !strings.Contains(res[4], "exit code") {
		t.Errorf("bash result = %q, want it to fail", res[4])
	}
	if p := planOf(t, dir, "h"); p != ticked {
		t.Errorf("plan:\n%s\nwant both tasks ticked by the run", p)
	}
}

// TestWorkersKilledWhileLanding kills the coordinator (SIGKILL) while a
// task's verify block runs on the landed tree; the next start-work lands
// the task's committed work once, and ticks it.
func TestWorkersKilledWhileLanding(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	m := t.TempDir()
	plan := "# Kill\n\n## TODOs\n\n- [ ] 1. Make k\n  ```sh\n  echo k > k.txt\n  ```\n" +
		fmt.Sprintf("  ```sh verify\n  case \"$PWD\" in */land) if [ ! -e %[1]s/once ]; then touch %[1]s/once %[1]s/landing; sleep 120; fi;; esac; test -f k.txt\n  ```\n", m) +
		"- [ ] 2. After [after: 1]\n  ```sh\n  cat k.txt > k2.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"kill": plan}, nil)
	cmd := exec.Command(bin, "start-work", "kill", "--workers", "2")
	cmd.Dir, cmd.Env = dir, cleanEnv(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(m, "landing")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the task never reached its landing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if p := planOf(t, dir, "kill"); strings.Contains(p, "[x]") {
		t.Fatalf("a task was ticked before its landed verify passed:\n%s", p)
	}
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "kill", "--workers", "2")
	if code != 0 {
		t.Fatalf("start-work after the kill = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if p := planOf(t, dir, "kill"); strings.Count(p, "- [x]") != 2 {
		t.Errorf("plan:\n%s\nwant both ticked", p)
	}
	if got := gitIn(t, dir, "log", "--format=%s", "main..weave/kill"); got != "After\nMake k" {
		t.Errorf("commits on weave/kill:\n%s\nwant each task once", got)
	}
	if got := gitIn(t, dir, "show", "weave/kill:k2.txt"); got != "k" {
		t.Errorf("k2.txt = %q", got)
	}
}

func TestWorkersFinishFastForwards(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := "# FF\n\n## TODOs\n\n- [ ] 1. Make f\n  **Files**: `f.txt`\n  ```sh\n  echo f > f.txt\n  ```\n" +
		"- [ ] 2. Make g\n  **Files**: `g.txt`\n  ```sh\n  echo g > g.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"ff": plan}, nil)
	code, out, errOut := runWeave(t, bin, dir, append(cleanEnv(t), "WEAVE_RUN_FINISH=ff", "WEAVE_RUN_LAND=merge"), "start-work", "ff", "--workers", "2", "--infer-deps")
	if code != 0 || !strings.Contains(errOut, "fast-forwarded") {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s\nwant main fast-forwarded", code, out, errOut)
	}
	if head, branch := gitIn(t, dir, "rev-parse", "HEAD"), gitIn(t, dir, "rev-parse", "weave/ff"); head != branch {
		t.Errorf("HEAD %s, weave/ff %s: want main fast-forwarded", head, branch)
	}
	if got := gitIn(t, dir, "symbolic-ref", "--short", "HEAD"); got != "main" {
		t.Errorf("on branch %q after the run, want main", got)
	}
	for _, f := range []string{"f.txt", "g.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not in the main tree after the fast-forward: %v", f, err)
		}
	}
	// run.land: merge lands each task as a merge commit.
	if got := gitIn(t, dir, "log", "--merges", "--format=%s", "weave/ff"); strings.Count(got, "\n") != 1 {
		t.Errorf("merge commits on weave/ff:\n%s\nwant one per task", got)
	}
}

// TestWorkersInterruptedResume is Ctrl-C while two workers run their
// blocks: the run pauses (exit 3) with nothing ticked, and the next
// start-work carries both tasks out.
func TestWorkersInterruptedResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	m := t.TempDir()
	block := func(n int) string {
		return fmt.Sprintf("- [ ] %[1]d. Make f%[1]d\n  **Files**: `f%[1]d.txt`\n  ```sh\n  touch %[2]s/started-%[1]d; [ -e %[2]s/go ] || sleep 120; echo %[1]d > f%[1]d.txt\n  ```\n", n, m)
	}
	dir := workersRepo(t, map[string]string{"int": "# Int\n\n## TODOs\n\n" + block(1) + block(2)}, nil)
	cmd := exec.Command(bin, "start-work", "int", "--workers", "2", "--infer-deps")
	cmd.Dir, cmd.Env = dir, cleanEnv(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err1 := os.Stat(filepath.Join(m, "started-1"))
		_, err2 := os.Stat(filepath.Join(m, "started-2"))
		if err1 == nil && err2 == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the two tasks never ran at once")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitPaused {
		t.Fatalf("start-work after Ctrl-C: %v, want exit %d", err, exitPaused)
	}
	if p := planOf(t, dir, "int"); strings.Contains(p, "[x]") {
		t.Fatalf("an interrupted task was ticked:\n%s", p)
	}
	if err := os.WriteFile(filepath.Join(m, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "int", "--workers", "2", "--infer-deps")
	if code != 0 {
		t.Fatalf("start-work after the pause = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if p := planOf(t, dir, "int"); strings.Count(p, "- [x]") != 2 {
		t.Errorf("plan:\n%s\nwant both ticked", p)
	}
	if got := gitIn(t, dir, "log", "--format=%s", "main..weave/int"); strings.Count(got, "Make f") != 2 {
		t.Errorf("commits on weave/int:\n%s\nwant one per task", got)
	}
}

// TestWorkersRewrittenGitFile is a model in a worker that points its
// worktree's .git at the project's own repository, so that the worker's
// commit would land on the person's branch: the commit is refused, the
// task runs again in a worktree made afresh, and the person's branch is
// untouched.
func TestWorkersRewrittenGitFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := "# G\n\n## TODOs\n\n" +
		"- [ ] 1. Write the greeting\n  **What**: greeting.txt says hello.\n  **Files**: `greeting.txt`\n  ```sh verify\n  grep -q hello greeting.txt\n  ```\n" +
		"- [ ] 2. Deploy\n  **Files**: `deployed.txt`\n  ```sh\n  echo deployed > deployed.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"g": plan}, nil)
	start := gitIn(t, dir, "rev-parse", "HEAD")
	srv := modeltest.NewServer(t,
		callOf(t, "read", map[string]any{"path": ".git"}),
		callOf(t, "write", map[string]any{"path": ".git", "content": "gitdir: " + filepath.Join(dir, ".git") + "\n"}),
		callOf(t, "write", map[string]any{"path": "greeting.txt", "content": "hello\n"}),
		callOf(t, "plan_check", map[string]any{"plan": "g", "task": 1}),
		modeltest.Turn{Text: "Done."},
		callOf(t, "write", map[string]any{"path": "greeting.txt", "content": "hello\n"}),
		callOf(t, "plan_check", map[string]any{"plan": "g", "task": 1}),
		modeltest.Turn{Text: "Done."},
	)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "g", "--workers", "2", "--infer-deps")
	if got := gitIn(t, dir, "rev-parse", "HEAD"); got != start {
		t.Fatalf("the person's branch moved from %s to %s:\n%s", start, got, gitIn(t, dir, "log", "--stat", "-3"))
	}
	if got := gitIn(t, dir, "symbolic-ref", "--short", "HEAD"); got != "main" {
		t.Fatalf("the project is on %q after the run, want main", got)
	}
	if code != 0 {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := gitIn(t, dir, "show", "weave/g:greeting.txt"); got != "hello" {
		t.Errorf("greeting.txt on weave/g = %q", got)
	}
}

// TestWorkersNextTaskStartsBeforeLanding: a worker whose task came back
// takes its next task before that task lands; the landing (its verify
// blocks on the landed tree) no longer holds the worker up. Task 2's
// verify block, on the landed tree alone, waits for task 3 to have
// started: task 3 can only start on task 2's worker, which it now does
// while task 2 lands. Before, the worker took its next task only after
// the landing, whose verify block then timed out and failed. Task 4
// depends on the others and starts from a head that holds them all.
func TestWorkersNextTaskStartsBeforeLanding(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	m := t.TempDir()
	waitFor := func(f string, tries int) string {
		return fmt.Sprintf(`i=0; until [ -e %s/%s ]; do i=$((i+1)); [ $i -lt %d ] || exit 9; sleep 0.05; done`, m, f, tries)
	}
	plan := "# Early\n\n## TODOs\n\n" +
		fmt.Sprintf("- [ ] 1. Hold\n  ```sh\n  %s; echo one > one.txt\n  ```\n", waitFor("started-3", 1200)) +
		fmt.Sprintf("- [ ] 2. Quick\n  ```sh\n  echo two > two.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in */land) %s;; esac; test -f two.txt\n  ```\n", waitFor("started-3", 600)) +
		fmt.Sprintf("- [ ] 3. Third\n  ```sh\n  touch %s/started-3; echo three > three.txt\n  ```\n", m) +
		"- [ ] 4. All [after: 1, 2, 3]\n  ```sh\n  cat one.txt two.txt three.txt > all.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"early": plan}, map[string]string{"README": "hi\n"})

	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "early", "--workers", "2", "--retries", "0", "--json")
	if code != 0 {
		t.Fatalf("start-work --workers 2 = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, ev := range events(t, out) {
		if ev.Type == run.EventTaskConflict || ev.Type == run.EventTaskFailed {
			t.Errorf("%s of task %d: %s%s", ev.Type, ev.Task, ev.Error, ev.Reason)
		}
	}
	if got := gitIn(t, dir, "show", "weave/early:all.txt"); got != "one\ntwo\nthree" {
		t.Errorf("all.txt on weave/early = %q", got)
	}
	if p := planOf(t, dir, "early"); strings.Count(p, "- [x]") != 4 {
		t.Errorf("plan after the run:\n%s\nwant 4 ticks", p)
	}
}
