//go:build slow && linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// handsCrashPlan is a plan for a run with three workers: tasks that run at
// once (1 to 6, no dependency: the plan names some, so the others wait for
// nothing), tasks that wait (7 to 9), tasks that edit different lines of
// one file (3, 4 and 8: they land cleanly in any order) and two that
// append to the same file (5 and 6: whichever lands second conflicts and
// runs again on the new head). Every block says "begin N" and then works
// for a moment, so that a kill can land inside it; a dependent task's
// block fails unless what it waits for is in its tree. Each task's verify
// block checks its own effect, which must hold on the landed tree.
const handsCrashPlan = "# Crash with workers\n\n## TODOs\n\n" +
	"- [ ] 1. Write alpha\n  **Files**: `alpha.txt` (new)\n  ```sh\n  echo begin 1; sleep 0.2\n  echo alpha > alpha.txt\n  ```\n  ```sh verify\n  grep -qx alpha alpha.txt\n  ```\n" +
	"- [ ] 2. Write beta\n  **Files**: `beta.txt` (new)\n  ```sh\n  echo begin 2; sleep 0.2\n  echo beta > beta.txt\n  ```\n  ```sh verify\n  grep -qx beta beta.txt\n  ```\n" +
	"- [ ] 3. Edit line 5 of the shared file\n  **Files**: `shared.txt`\n  ```sh\n  echo begin 3; sleep 0.1\n  sed -i 's/^line 5$/task 3/' shared.txt\n  ```\n  ```sh verify\n  grep -qx 'task 3' shared.txt\n  ```\n" +
	"- [ ] 4. Edit line 25 of the shared file\n  **Files**: `shared.txt`\n  ```sh\n  echo begin 4; sleep 0.1\n  sed -i 's/^line 25$/task 4/' shared.txt\n  ```\n  ```sh verify\n  grep -qx 'task 4' shared.txt\n  ```\n" +
	"- [ ] 5. Append to the log\n  **Files**: `log.txt`\n  ```sh\n  echo begin 5; sleep 0.1\n  echo 'task 5' >> log.txt\n  ```\n  ```sh verify\n  grep -qx 'task 5' log.txt\n  ```\n" +
	"- [ ] 6. Append to the log too\n  **Files**: `log.txt`\n  ```sh\n  echo begin 6; sleep 0.1\n  echo 'task 6' >> log.txt\n  ```\n  ```sh verify\n  grep -qx 'task 6' log.txt\n  ```\n" +
	"- [ ] 7. Join alpha and beta\n  **Depends**: 1, 2\n  **Files**: `joined.txt` (new)\n  ```sh\n  echo begin 7; sleep 0.1\n  cat alpha.txt beta.txt > joined.txt\n  ```\n  ```sh verify\n  test \"$(cat joined.txt)\" = \"$(printf 'alpha\\nbeta')\"\n  ```\n" +
	"- [ ] 8. Edit line 15 after lines 5 and 25 [after: 3, 4]\n  **Files**: `shared.txt`\n  ```sh\n  echo begin 8; sleep 0.1\n  grep -qx 'task 3' shared.txt && grep -qx 'task 4' shared.txt\n  sed -i 's/^line 15$/task 8/' shared.txt\n  ```\n  ```sh verify\n  grep -qx 'task 8' shared.txt\n  ```\n" +
	"- [ ] 9. Finish\n  **Depends**: 7, 8\n  **Files**: `final.txt` (new)\n  ```sh\n  echo begin 9\n  test -s joined.txt && grep -qx 'task 8' shared.txt\n  echo done > final.txt\n  ```\n  ```sh verify\n  grep -qx done final.txt\n  ```\n"

const handsCrashTasks = 9

// handsCrashRepo makes a git repository on branch main holding the files
// the plan edits, with the plan in .weave/plans/crash.md (not committed,
// as a person's plan often is not), and returns the start commit.
func handsCrashRepo(t *testing.T, dir string) string {
	t.Helper()
	var shared strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&shared, "line %d\n", i)
	}
	for name, body := range map[string]string{
		"shared.txt":            shared.String(),
		"log.txt":               "log\n",
		".weave/plans/crash.md": handsCrashPlan,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	handsGitT(t, dir, "init", "-q", "-b", "main")
	handsGitT(t, dir, "config", "user.name", "Crash")
	handsGitT(t, dir, "config", "user.email", "crash@localhost")
	handsGitT(t, dir, "config", "commit.gpgsign", "false")
	handsGitT(t, dir, "add", "shared.txt", "log.txt")
	handsGitT(t, dir, "commit", "-q", "-m", "Start")
	return handsGitT(t, dir, "rev-parse", "HEAD")
}

func handsGitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// handsEvent is the part of a --json event the trials read.
type handsEvent struct {
	Type   string `json:"type"`
	Task   int    `json:"task"`
	Output string `json:"output"`
}

// handsKill is where a trial's kill lands: after the n-th event of any
// kind, or after the n-th task.landing event (during a landing), or after
// the n-th block saying "begin" (during a worker's block), and a pause.
type handsKill struct {
	what  string // "event", "landing" or "block"
	n     int
	pause time.Duration
}

func (k handsKill) String() string { return fmt.Sprintf("%s #%d + %v", k.what, k.n, k.pause) }

func handsPickKill(rng *rand.Rand) handsKill {
	switch rng.IntN(3) {
	case 0:
		return handsKill{"event", rng.IntN(60), time.Duration(rng.Int64N(int64(5 * time.Millisecond)))}
	case 1:
		return handsKill{"landing", rng.IntN(handsCrashTasks), time.Duration(rng.Int64N(int64(40 * time.Millisecond)))}
	default:
		return handsKill{"block", rng.IntN(handsCrashTasks), time.Duration(rng.Int64N(int64(250 * time.Millisecond)))}
	}
}

// handsRun is one start-work of a trial.
type handsRun struct {
	pid       int
	killed    bool
	err       error
	stderr    string
	conflicts map[int]bool // tasks a task.conflict event named
	// story is, per task, the types of its events in order, for a
	// failure's message.
	story map[int][]string
}

// handsStart runs `weave start-work --workers 3 --json crash` in dir and
// kills it with SIGKILL at kill (nil: never); the kill follows the run's
// own events, not the clock, so that it lands in the same phase of a run
// on any machine.
func handsStart(t *testing.T, bin, dir, xdg string, kill *handsKill) handsRun {
	t.Helper()
	cmd := exec.Command(bin, "--dir", dir, "start-work", "--workers", "3", "--retries", "3", "--json", "crash")
	var env []string
	for _, kv := range os.Environ() {
		// The trials' own knobs are not weave's.
		if !strings.HasPrefix(kv, "WEAVE_HANDS_") {
			env = append(env, kv)
		}
	}
	cmd.Env = trustingEnv(t, append(env, "XDG_CONFIG_HOME="+xdg))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := handsRun{pid: cmd.Process.Pid, conflicts: map[int]bool{}, story: map[int][]string{}}
	// A run that hangs is killed by this guard, and the trial fails below.
	guard := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	defer guard.Stop()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	counts := map[string]int{}
	for sc.Scan() {
		var ev handsEvent
		_ = json.Unmarshal(sc.Bytes(), &ev)
		if ev.Type == "task.conflict" {
			r.conflicts[ev.Task] = true
		}
		if ev.Task > 0 && ev.Type != "task.output" {
			r.story[ev.Task] = append(r.story[ev.Task], strings.TrimPrefix(ev.Type, "task."))
		}
		// After the kill the lines already written are still read: a
		// conflict reported just before it counts.
		if kill == nil || r.killed {
			continue
		}
		hit := false
		switch {
		case kill.what == "event":
			hit = counts["event"] == kill.n
			counts["event"]++
		case kill.what == "landing" && ev.Type == "task.landing":
			hit = counts["landing"] == kill.n
			counts["landing"]++
		case kill.what == "block" && ev.Type == "task.output" && strings.HasPrefix(ev.Output, "begin "):
			hit = counts["block"] == kill.n
			counts["block"]++
		}
		if hit {
			time.Sleep(kill.pause)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			r.killed = true
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	r.err = cmd.Wait()
	r.stderr = stderr.String()
	if r.killed && r.err == nil {
		r.killed = false // it had finished before the signal
	}
	return r
}

// handsCommit is a task's commit on weave/crash and its place there, 0
// for the newest.
type handsCommit struct {
	gitwork.TaskCommit
	Order int
}

// handsLive is, per task, its commits on weave/crash since start that are
// not reverted by a later one, and every own commit it has there.
func handsLive(t *testing.T, repo *gitwork.Repo, start string) (live map[int][]handsCommit, own map[int]int) {
	t.Helper()
	ctx := context.Background()
	if _, err := repo.RevParse(ctx, "refs/heads/weave/crash"); err != nil {
		return map[int][]handsCommit{}, map[int]int{}
	}
	list, err := repo.TaskCommits(ctx, "refs/heads/weave/crash", start, "crash")
	if err != nil {
		t.Fatal(err)
	}
	reverted := map[string]bool{}
	for _, c := range list {
		if c.Reverts != "" {
			reverted[c.Reverts] = true
		}
	}
	live, own = map[int][]handsCommit{}, map[int]int{}
	for i, c := range list {
		if c.Reverts != "" {
			continue
		}
		own[c.Task]++
		if !reverted[c.SHA] {
			live[c.Task] = append(live[c.Task], handsCommit{c, i})
		}
	}
	return live, own
}

// handsVerifyAtTip runs task's verify blocks on the tree of weave/crash's
// tip (exported with git archive, so that no worktree is added) and
// returns what failed, "" when they pass.
func handsVerifyAtTip(t *testing.T, tree string, task plans.Task) string {
	t.Helper()
	for _, b := range task.VerifyBlocks() {
		cmd := exec.Command("sh", "-e", "-c", b.Code)
		cmd.Dir = tree
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Sprintf("%v: %s", err, out)
		}
	}
	return ""
}

// handsTipTree exports the tree of weave/crash into a fresh directory.
func handsTipTree(t *testing.T, dir string) string {
	t.Helper()
	tree := t.TempDir()
	archive := exec.Command("git", "archive", "refs/heads/weave/crash")
	archive.Dir = dir
	tarball, err := archive.Output()
	if err != nil {
		t.Fatalf("git archive weave/crash: %v", err)
	}
	untar := exec.Command("tar", "-x", "-C", tree)
	untar.Stdin = bytes.NewReader(tarball)
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("untar: %v: %s", err, out)
	}
	return tree
}

// handsUnlanded is the work committed on the task branches and not on
// weave/crash: task number to the attempt that made it.
func handsUnlanded(t *testing.T, repo *gitwork.Repo, dir string) map[int]string {
	t.Helper()
	ctx := context.Background()
	out := map[int]string{}
	refs := handsGitT(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/weave/")
	integ := ""
	if _, err := repo.RevParse(ctx, "refs/heads/weave/crash"); err == nil {
		integ = "refs/heads/weave/crash"
	}
	for _, ref := range strings.Fields(refs) {
		if !strings.HasPrefix(ref, "refs/heads/weave/crash-task-") {
			continue
		}
		list, err := repo.TaskCommits(ctx, ref, integ, "crash")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			if c.Reverts == "" {
				out[c.Task] = c.Attempt
			}
		}
	}
	return out
}

var handsWorktreeName = regexp.MustCompile(`^w[0-9]+$|^land$`)

// handsCheckWorktrees: every worktree registered besides the main one is
// one the run reuses (.weave/worktrees/crash/w<i> or land), and is there.
func handsCheckWorktrees(t *testing.T, dir string) string {
	t.Helper()
	root, _ := filepath.EvalSymlinks(dir)
	slots := filepath.Join(root, ".weave", "worktrees", "crash")
	var bad []string
	for _, rec := range strings.Split(handsGitT(t, dir, "worktree", "list", "--porcelain"), "\n\n") {
		var path string
		prunable := false
		for _, line := range strings.Split(rec, "\n") {
			if p, ok := strings.CutPrefix(line, "worktree "); ok {
				path = p
			}
			if strings.HasPrefix(line, "prunable") {
				prunable = true
			}
		}
		if path == "" {
			continue
		}
		if p, err := filepath.EvalSymlinks(path); err == nil {
			path = p
		}
		if path == root {
			continue
		}
		if prunable || filepath.Dir(path) != slots || !handsWorktreeName.MatchString(filepath.Base(path)) {
			bad = append(bad, fmt.Sprintf("%s (prunable %v)", path, prunable))
		}
	}
	if len(bad) > 0 {
		return "worktrees left that no run reuses: " + strings.Join(bad, ", ")
	}
	return ""
}

// handsLeftProcesses lists the live processes that work in dir (their
// working directory inside it: a block, a plugin) or carry the mark of a
// killed run's process groups (WEAVE_PROCESS_HOST=<pid>.), waiting a
// bounded moment for those the kernel is still taking down.
func handsLeftProcesses(dead []int, dir string) []string {
	root, _ := filepath.EvalSymlinks(dir)
	var marks [][]byte
	for _, pid := range dead {
		marks = append(marks, []byte(fmt.Sprintf("WEAVE_PROCESS_HOST=%d.", pid)))
	}
	scan := func() []string {
		var left []string
		des, _ := os.ReadDir("/proc")
		for _, de := range des {
			pid, err := strconv.Atoi(de.Name())
			if err != nil || pid == os.Getpid() || !alive(pid) {
				continue
			}
			hit := false
			if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && (cwd == root || strings.HasPrefix(cwd, root+"/")) {
				hit = true
			}
			if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
				for _, m := range marks {
					if bytes.Contains(env, m) {
						hit = true
					}
				}
			}
			if hit {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				left = append(left, fmt.Sprintf("%d %q", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
			}
		}
		return left
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := scan()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// handsCheck checks the invariants of a run with workers after a run of a
// trial ended (killed, or to the end when final):
//   - the plan's bytes are as written but for checkboxes;
//   - a ticked task has exactly one live commit on weave/crash, and its
//     verify blocks pass on the branch's tip; when final, every task is
//     ticked and a task has a live commit only if it is ticked;
//   - no task's commit landed twice (by its Weave-Task trailer), reverted
//     or not;
//   - when final, a task's commit comes after those of the tasks it
//     depends on.
func handsCheck(t *testing.T, dir, start string, final bool) []string {
	t.Helper()
	return handsCheckPlan(t, dir, start, final, handsCrashPlan)
}

// handsCheckPlan is handsCheck of a run of want, a plan of
// handsCrashTasks tasks written in place of handsCrashPlan.
func handsCheckPlan(t *testing.T, dir, start string, final bool, want string) []string {
	t.Helper()
	var bad []string
	cur, err := os.ReadFile(filepath.Join(dir, ".weave", "plans", "crash.md"))
	if err != nil {
		t.Fatal(err)
	}
	p := plans.Parse(cur)
	marks := map[int]bool{}
	for _, tk := range p.Tasks {
		marks[tk.Mark] = true
	}
	if len(cur) != len(want) || len(p.Tasks) != handsCrashTasks {
		return []string{fmt.Sprintf("the plan is %d bytes with %d tasks, want %d with %d", len(cur), len(p.Tasks), len(want), handsCrashTasks)}
	}
	for i := range cur {
		if cur[i] != want[i] && !marks[i] {
			bad = append(bad, fmt.Sprintf("plan byte %d changed outside a checkbox", i))
			break
		}
	}
	repo, err := gitwork.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	live, own := handsLive(t, repo, start)
	// A task waits for what it depends on: on the branch its commit comes
	// after theirs (TaskCommits lists the newest first).
	if final {
		pos := map[int]int{}
		for n, cs := range live {
			if len(cs) == 1 {
				pos[n] = cs[0].Order
			}
		}
		for _, tk := range p.Tasks {
			for _, dep := range tk.After {
				if pos[tk.Number] > pos[dep] {
					bad = append(bad, fmt.Sprintf("task %d landed before task %d, which it depends on", tk.Number, dep))
				}
			}
		}
	}
	var tree string
	for _, tk := range p.Tasks {
		n := tk.Number
		// No verify of this plan fails on a landed tree, so no landing is
		// ever reverted: a second commit of a task is a second landing.
		if own[n] > 1 {
			bad = append(bad, fmt.Sprintf("task %d landed %d times", n, own[n]))
		}
		if final && !tk.Done {
			bad = append(bad, fmt.Sprintf("task %d is not ticked after a run to the end", n))
		}
		if final && !tk.Done && len(live[n]) > 0 {
			bad = append(bad, fmt.Sprintf("task %d landed but is not ticked", n))
		}
		if !tk.Done {
			continue
		}
		if len(live[n]) != 1 {
			bad = append(bad, fmt.Sprintf("task %d is ticked with %d commits on weave/crash", n, len(live[n])))
			continue
		}
		if tree == "" {
			tree = handsTipTree(t, dir)
		}
		if msg := handsVerifyAtTip(t, tree, tk); msg != "" {
			bad = append(bad, fmt.Sprintf("task %d is ticked but its verify fails on weave/crash: %s", n, msg))
		}
	}
	return bad
}

// TestSlowWorkersCrashResume runs many seeded trials: a run with three
// workers of handsCrashPlan is killed with SIGKILL at a moment chosen from
// its own events (inside a worker's block, during a landing, anywhere),
// maybe killed again on its next start, then started again to the end.
// After each run the invariants of a run with workers are checked (see
// handsCheck), and after the last: the work committed on a task branch
// when a run died was landed, not redone (unless it conflicted), the
// worktrees left are those a run reuses, and no process of a killed run
// is left. WEAVE_HANDS_CRASH_SEED=<seed> replays one trial;
// WEAVE_HANDS_CRASH_TRIALS sets how many run (default 16).
func TestSlowWorkersCrashResume(t *testing.T) {
	bin := buildWeave(t)
	trials := 16
	if env := os.Getenv("WEAVE_HANDS_CRASH_TRIALS"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n <= 0 {
			t.Fatalf("WEAVE_HANDS_CRASH_TRIALS=%q: want a number of trials", env)
		}
		trials = n
	}
	seeds := make([]uint64, trials)
	for i := range seeds {
		seeds[i] = 20261128 + uint64(i)
	}
	if env := os.Getenv("WEAVE_HANDS_CRASH_SEED"); env != "" {
		s, err := strconv.ParseUint(env, 10, 64)
		if err != nil {
			t.Fatalf("WEAVE_HANDS_CRASH_SEED=%q: want a seed", env)
		}
		seeds = []uint64{s}
	}
	var kills, landingKills, blockKills, conflicts int
	for _, seed := range seeds {
		k, lk, bk, c := handsTrial(t, bin, seed)
		kills += k
		landingKills += lk
		blockKills += bk
		conflicts += c
		if t.Failed() {
			return
		}
	}
	t.Logf("%d trials: %d runs killed (%d during a landing, %d during a block), %d conflicts reported", len(seeds), kills, landingKills, blockKills, conflicts)
	if len(seeds) > 1 && kills < len(seeds)/2 {
		t.Errorf("only %d runs of %d trials were killed mid-run, want at least %d", kills, len(seeds), len(seeds)/2)
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := pluginsOf(bin); len(left) > 0; left = pluginsOf(bin) {
		if time.Now().After(deadline) {
			t.Fatalf("plugins left running after the runs ended: pids %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// handsTrial is one seeded trial (see TestSlowWorkersCrashResume); it
// returns how many runs it killed (in all, during a landing, during a
// block) and how many conflicts the runs reported.
func handsTrial(t *testing.T, bin string, seed uint64) (kills, landingKills, blockKills, conflicts int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 25))
	dir := t.TempDir()
	xdg := t.TempDir()
	start := handsCrashRepo(t, dir)
	repo, err := gitwork.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("trial seed %d (replay: WEAVE_HANDS_CRASH_SEED=%d go test -tags slow ./cmd/weave/ -run TestSlowWorkersCrashResume): %s", seed, seed, fmt.Sprintf(format, args...))
	}
	committed := map[int]string{} // work committed on a task branch, not landed, as a run died
	conflicted := map[int]bool{}
	story := map[int][]string{}
	var dead []int
	runs := 1 + rng.IntN(2) // runs killed before the one that goes to the end
	for i := 0; i <= runs; i++ {
		var kill *handsKill
		if i < runs {
			k := handsPickKill(rng)
			kill = &k
		}
		r := handsStart(t, bin, dir, xdg, kill)
		for n := range r.conflicts {
			conflicted[n] = true
			conflicts++
		}
		for n, evs := range r.story {
			story[n] = append(story[n], fmt.Sprintf("run %d: %s", i, strings.Join(evs, " ")))
		}
		if r.killed {
			for n := range story {
				story[n] = append(story[n], fmt.Sprintf("run %d killed at %v", i, kill))
			}
		}
		if r.killed {
			kills++
			dead = append(dead, r.pid)
			switch kill.what {
			case "landing":
				landingKills++
			case "block":
				blockKills++
			}
		} else if r.err != nil {
			fail("run %d (kill %v) failed on its own: %v\n%s", i, kill, r.err, r.stderr)
			return
		}
		final := !r.killed && i == runs
		if !r.killed && i < runs {
			// It finished before the kill point: nothing is left to do.
			final = true
		}
		for _, msg := range handsCheck(t, dir, start, final) {
			fail("after run %d (kill %v): %s", i, kill, msg)
		}
		if r.killed {
			for n, attempt := range handsUnlanded(t, repo, dir) {
				committed[n] = attempt
			}
		}
		if final {
			break
		}
	}
	// Work committed on a task branch when a run died is landed as it
	// was, not done again, unless it conflicted with what landed first.
	live, _ := handsLive(t, repo, start)
	for n, attempt := range committed {
		if len(live[n]) == 1 && live[n][0].Attempt != attempt && !conflicted[n] {
			fail("task %d's committed work (attempt %s) was lost: attempt %s landed instead, no conflict reported (its events: %s)", n, attempt, live[n][0].Attempt, strings.Join(story[n], "; "))
		}
	}
	if msg := handsCheckWorktrees(t, dir); msg != "" {
		fail("%s", msg)
	}
	if left := handsLeftProcesses(dead, dir); len(left) > 0 {
		sort.Strings(left)
		fail("processes left running after the runs ended: %s", strings.Join(left, "; "))
	}
	return kills, landingKills, blockKills, conflicts
}
