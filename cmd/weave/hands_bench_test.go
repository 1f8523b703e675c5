package main

// The benchmarks of a run with workers (weave start-work --workers N):
// independent tasks at once against the ideal of the same tasks run by a
// pool of the same size, and the per-task cost of a worktree, a commit and
// landing against the same git work done by hand in a shell. Their sizes
// come from the environment (scripts/bench.sh sets the sizes the issue
// names); the defaults keep a run of every benchmark once short.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/gitwork"
)

// handsSleepShape is the number of `sleep 1` tasks and of workers of
// BenchmarkStartWorkWorkers and its floor: WEAVE_BENCH_SLEEP ("32x8", as
// scripts/bench.sh sets it), else 8 tasks on 4 workers.
func handsSleepShape(b *testing.B) (tasks, workers int) {
	b.Helper()
	return handsShape(b, "WEAVE_BENCH_SLEEP", 8, 4)
}

// handsLandShape is the number of files of the repository and of tasks of
// BenchmarkLandPerTask and its floor: WEAVE_BENCH_LAND ("10000x20", files
// x tasks), else 1,000 files and 4 tasks.
func handsLandShape(b *testing.B) (files, tasks int) {
	b.Helper()
	return handsShape(b, "WEAVE_BENCH_LAND", 1000, 4)
}

// handsLandWorkers is how many workers the landing benchmarks use: two, so
// that every second task lands on a head that moved since it started.
const handsLandWorkers = 2

func handsShape(b *testing.B, name string, x, y int) (int, int) {
	b.Helper()
	env := os.Getenv(name)
	if env == "" {
		return x, y
	}
	l, r, ok := strings.Cut(env, "x")
	a, err1 := strconv.Atoi(l)
	c, err2 := strconv.Atoi(r)
	if !ok || err1 != nil || err2 != nil || a <= 0 || c <= 0 {
		b.Fatalf("%s=%q: want two numbers as NxM", name, env)
	}
	return a, c
}

// handsSleepPlan is a plan of n tasks, each a `sleep 1` that then writes a file
// of its own, named in its Files list, so that with --infer-deps no task
// waits for another.
func handsSleepPlan(n int) []byte {
	var sb strings.Builder
	sb.WriteString("# Sleepers\n\n## TODOs\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "- [ ] %d. Sleep %d\n  **Files**: `out/s%d.txt` (new)\n  ```sh\n  sleep 1\n  mkdir -p out && echo %d > out/s%d.txt\n  ```\n", i, i, i, i, i)
	}
	return []byte(sb.String())
}

// handsGit runs git in dir and fails the benchmark when it fails.
func handsGit(b *testing.B, dir string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = handsGitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// handsGitEnv is the environment git runs with in the benchmarks' floors: the
// caller's without GIT_* variables, as weave runs git (internal/gitwork).
func handsGitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// handsRepoInit makes dir a git repository on branch main with one commit of
// files files (in directories of 100), an identity of its own and
// .weave/ ignored, and writes plan as .weave/plans/<name>.md.
func handsRepoInit(b *testing.B, dir string, files int) {
	b.Helper()
	handsGit(b, dir, "init", "-q", "-b", "main")
	handsGit(b, dir, "config", "user.name", "Bench")
	handsGit(b, dir, "config", "user.email", "bench@localhost")
	handsGit(b, dir, "config", "commit.gpgsign", "false")
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("/.weave/\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < files; i++ {
		sub := filepath.Join(dir, "src", fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", i%100)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	handsGit(b, dir, "add", "-A")
	handsGit(b, dir, "commit", "-q", "-m", "Start")
}

func handsWritePlan(b *testing.B, dir, name string, plan []byte) {
	b.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".weave", "plans"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", name+".md"), plan, 0o644); err != nil {
		b.Fatal(err)
	}
}

// handsStartWork runs `weave start-work --workers N --infer-deps plan` in dir
// and returns its wall and CPU time (weave's and its children's).
func handsStartWork(b *testing.B, bin, dir string, env []string, plan string, workers int) (time.Duration, time.Duration) {
	b.Helper()
	start := time.Now()
	cmd := exec.Command(bin, "--dir", dir, "start-work", "--workers", strconv.Itoa(workers), "--infer-deps", plan)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("start-work --workers %d: %v\n%s", workers, err, tail(out))
	}
	return time.Since(start), cpuTime(cmd)
}

// handsCheckLanded fails the benchmark unless every one of the plan's tasks has
// exactly one commit on weave/<plan>: a run that did less is no figure.
func handsCheckLanded(b *testing.B, dir, plan string, tasks int) {
	b.Helper()
	ctx := context.Background()
	repo, err := gitwork.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	list, err := repo.TaskCommits(ctx, "refs/heads/weave/"+plan, "main", plan)
	if err != nil {
		b.Fatal(err)
	}
	seen := map[int]int{}
	for _, c := range list {
		seen[c.Task]++
	}
	for i := 1; i <= tasks; i++ {
		if seen[i] != 1 {
			b.Fatalf("task %d has %d commits on weave/%s, want 1 (%d commits in all)", i, seen[i], plan, len(list))
		}
	}
}

// BenchmarkStartWorkWorkers runs `weave start-work --workers W --infer-deps`
// on a plan of T independent `sleep 1` tasks (see handsSleepShape) in a fresh
// git repository and reports the wall time of the run (s/run).
// BenchmarkWorkersFloor is its floor.
func BenchmarkStartWorkWorkers(b *testing.B) {
	bin := weaveBinary(b)
	tasks, workers := handsSleepShape(b)
	b.ResetTimer()
	var total, cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		handsRepoInit(b, dir, 0)
		handsWritePlan(b, dir, "sleep", handsSleepPlan(tasks))
		env := benchEnv(b, bin, dir)
		b.StartTimer()
		wall, c := handsStartWork(b, bin, dir, env, "sleep", workers)
		total += wall
		cpu += c
		b.StopTimer()
		handsCheckLanded(b, dir, "sleep", tasks)
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/run")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*tasks), "cpu-ns/task")
}

// BenchmarkWorkersFloor is the floor of BenchmarkStartWorkWorkers: the
// ideal of T tasks of `sleep 1` on W slots (ceil(T/W) seconds) plus the
// least durable work that records each task, done here in the benchmark's
// own process. A pool of W slots each runs a task's block (`sh -c`, the
// same sleep and file) and, one task at a time as a landing queue would,
// commits the task's file in the repository (`git add` and `git commit`,
// one commit per task) and ticks its checkbox in place (the byte written
// and the plan fsynced); a slot takes its next task as soon as its block
// ended, so commits overlap the other slots' sleeps, as they may in weave.
// No worktree, no merge, no verify, no state file: what is left of the
// ideal is what any runner that commits each task must pay.
func BenchmarkWorkersFloor(b *testing.B) {
	tasks, workers := handsSleepShape(b)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		handsRepoInit(b, dir, 0)
		plan := handsSleepPlan(tasks)
		handsWritePlan(b, dir, "sleep", plan)
		b.StartTimer()
		start := time.Now()
		if err := handsFloorPool(dir, filepath.Join(dir, ".weave", "plans", "sleep.md"), tasks, workers); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		if n := handsGit(b, dir, "rev-list", "--count", "main"); n != strconv.Itoa(tasks+1) {
			b.Fatalf("floor made %s commits, want %d", n, tasks+1)
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/run")
}

// handsFloorPool runs the floor's pool (see BenchmarkWorkersFloor).
func handsFloorPool(dir, planPath string, tasks, workers int) error {
	plan, err := os.ReadFile(planPath)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(planPath, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// The offsets of the boxes, found once: the floor keeps the plan in
	// memory as weave does.
	var boxes []int
	for off := 0; ; {
		i := strings.Index(string(plan[off:]), "- [ ]")
		if i < 0 {
			break
		}
		off += i + 3
		boxes = append(boxes, off)
	}
	if len(boxes) != tasks {
		return fmt.Errorf("plan has %d boxes, want %d", len(boxes), tasks)
	}
	next := make(chan int, tasks)
	for i := 1; i <= tasks; i++ {
		next <- i
	}
	close(next)
	var land sync.Mutex
	errs := make(chan error, workers)
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, handsGitEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for w := 0; w < workers; w++ {
		go func() {
			for n := range next {
				block := exec.Command("sh", "-e", "-c", fmt.Sprintf("sleep 1\nmkdir -p out && echo %d > out/s%d.txt", n, n))
				block.Dir = dir
				if out, err := block.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("task %d: %v: %s", n, err, out)
					return
				}
				land.Lock()
				err := git("add", "--", fmt.Sprintf("out/s%d.txt", n))
				if err == nil {
					err = git("commit", "-q", "--no-verify", "-m", fmt.Sprintf("Sleep %d", n))
				}
				if err == nil {
					off := boxes[n-1]
					plan[off] = 'x'
					if _, err = f.WriteAt(plan[off:off+1], int64(off)); err == nil {
						err = f.Sync()
					}
				}
				land.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// handsLandPlan is a plan of n tasks that each write one new file of their own
// (named in Files, so that with --infer-deps they are independent) and
// have no verify block: what is measured is the worktree, the commit and
// the landing around a block that costs next to nothing.
func handsLandPlan(n int) []byte {
	var sb strings.Builder
	sb.WriteString("# Land\n\n## TODOs\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "- [ ] %d. Write %d\n  **Files**: `out/t%d.txt` (new)\n  ```sh\n  mkdir -p out && echo %d > out/t%d.txt\n  ```\n", i, i, i, i, i)
	}
	return []byte(sb.String())
}

// handsLandRepo is a repository of F files (see handsLandShape), made once per
// benchmark: each run works on a plan of its own name in it, so that it
// starts without worktrees or branches of an earlier run, and the
// repository's size is the same for every run.
func handsLandRepo(b *testing.B, files int) string {
	b.Helper()
	dir := b.TempDir()
	handsRepoInit(b, dir, files)
	if err := os.MkdirAll(filepath.Join(dir, ".weave", "plans"), 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkLandPerTask runs `weave start-work --workers 2 --infer-deps` on
// a plan of T tasks that each write one file (see handsLandPlan), in a
// repository of F files (see handsLandShape), and reports the wall and CPU
// time per task: one worktree made or reused, one commit, one landing
// and one tick each, and the run's start shared among the tasks.
// BenchmarkLandByHand is its floor.
func BenchmarkLandPerTask(b *testing.B) {
	bin := weaveBinary(b)
	files, tasks := handsLandShape(b)
	dir := handsLandRepo(b, files)
	env := benchEnv(b, bin, dir)
	b.ResetTimer()
	var total, cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		plan := fmt.Sprintf("land%d", i)
		handsWritePlan(b, dir, plan, handsLandPlan(tasks))
		b.StartTimer()
		wall, c := handsStartWork(b, bin, dir, env, plan, handsLandWorkers)
		total += wall
		cpu += c
		b.StopTimer()
		handsCheckLanded(b, dir, plan, tasks)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*tasks), "ns/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*tasks), "cpu-ns/task")
}

// handsByHand is what a person does for each task of handsLandPlan, two at a time as
// two workers would, in a shell: a worktree on a branch of its own from the
// integration branch (git worktree add), the task's file written, one
// commit (git add, git commit), then, one task after the other, the commit
// rebased onto the integration branch (git rebase; the second of a pair
// rebases onto the first's) and the integration branch moved to it (git
// branch -f). The worktrees are left where they are, as a person moving
// on would.
const handsByHand = `set -e
root=$1 wt=$2 integ=$3 tasks=$4 workers=$5
cd "$root"
git branch "$integ" main
i=1
while [ "$i" -le "$tasks" ]; do
  round=""
  j=0
  while [ "$j" -lt "$workers" ] && [ "$i" -le "$tasks" ]; do
    git worktree add -q -b "$integ-task-$i" "$wt/$i" "$integ"
    mkdir -p "$wt/$i/out" && echo "$i" > "$wt/$i/out/t$i.txt"
    git -C "$wt/$i" add -A
    git -C "$wt/$i" commit -q --no-verify -m "Write $i"
    round="$round $i"
    i=$((i + 1)) j=$((j + 1))
  done
  for k in $round; do
    git -C "$wt/$k" rebase -q "$integ"
    git -C "$wt/$k" branch -f "$integ" HEAD
  done
done
`

// BenchmarkLandByHand is the floor of BenchmarkLandPerTask: the same tasks
// on the same repository, done by hand in one bash (see handsByHand), and the
// wall and CPU time per task.
func BenchmarkLandByHand(b *testing.B) {
	files, tasks := handsLandShape(b)
	dir := handsLandRepo(b, files)
	wt := b.TempDir()
	b.ResetTimer()
	var total, cpu time.Duration
	for i := 0; i < b.N; i++ {
		integ := fmt.Sprintf("hand%d", i)
		start := time.Now()
		cmd := exec.Command("bash", "-c", handsByHand, "byhand", dir, filepath.Join(wt, integ), integ, strconv.Itoa(tasks), strconv.Itoa(handsLandWorkers))
		cmd.Env = handsGitEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("by hand: %v\n%s", err, tail(out))
		}
		total += time.Since(start)
		cpu += cpuTime(cmd)
		b.StopTimer()
		if n := handsGit(b, dir, "rev-list", "--count", "main.."+integ); n != strconv.Itoa(tasks) {
			b.Fatalf("by hand made %s commits, want %d", n, tasks)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*tasks), "ns/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*tasks), "cpu-ns/task")
}

// BenchmarkStartWorkRunbookWorkers1 is BenchmarkStartWorkRunbook with
// --workers 1 said aloud: the lone run's code path, which must keep its
// figure (its floor is BenchmarkRunbookFloor).
func BenchmarkStartWorkRunbookWorkers1(b *testing.B) {
	bin := weaveBinary(b)
	for _, tasks := range benchTaskCounts(b) {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			benchStartWork(b, bin, truePlan(tasks), "", tasks, "--workers", "1")
		})
	}
}
