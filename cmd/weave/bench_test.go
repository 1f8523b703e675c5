package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/trust"
)

// weaveBinary builds weave once for the benchmarks that run it as a process.
func weaveBinary(b *testing.B) string {
	b.Helper()
	// scripts/bench.sh builds weave once for all its runs.
	if bin := os.Getenv("WEAVE_BENCH_BIN"); bin != "" {
		return bin
	}
	return weaveBin(b)
}

// truePlan is a runbook plan of n tasks whose one block is `true`.
func truePlan(n int) []byte {
	var sb strings.Builder
	sb.WriteString("# Bench\n\n## TODOs\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "- [ ] %d. Task %d\n  ```sh\n  true\n  ```\n", i, i)
	}
	return []byte(sb.String())
}

func benchProject(b *testing.B, plan []byte) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".weave", "plans"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", "bench.md"), plan, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// benchTaskCounts are the runbook sizes the runbook benchmarks run:
// WEAVE_BENCH_TASKS (e.g. "100,300,1000,3000", as scripts/bench.sh sets
// it), else 100 alone, which keeps a run of every benchmark once short.
func benchTaskCounts(b *testing.B) []int {
	b.Helper()
	env := os.Getenv("WEAVE_BENCH_TASKS")
	if env == "" {
		return []int{100}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("WEAVE_BENCH_TASKS=%q: want task counts separated by commas", env)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkStartWorkRunbook runs `weave start-work` on runbook plans of
// `true` blocks (see benchTaskCounts for the sizes) and reports the time per
// task. BenchmarkRunbookFloor is its floor.
func BenchmarkStartWorkRunbook(b *testing.B) {
	bin := weaveBinary(b)
	for _, tasks := range benchTaskCounts(b) {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			benchStartWork(b, bin, truePlan(tasks), "", tasks)
		})
	}
}

// benchStartWork runs `weave start-work` b.N times on plan (with config as
// .weave/config.yaml when not empty, and flags before the plan's name) and
// reports the time and CPU time (weave's and its children's) per task.
func benchStartWork(b *testing.B, bin string, plan []byte, config string, tasks int, flags ...string) {
	var total, cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := benchProject(b, plan)
		if config != "" {
			if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(config), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		env := benchEnv(b, bin, dir)
		b.StartTimer()
		start := time.Now()
		cmd := exec.Command(bin, append(append([]string{"--dir", dir, "start-work"}, flags...), "bench")...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("start-work: %v\n%s", err, tail(out))
		}
		total += time.Since(start)
		cpu += cpuTime(cmd)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*tasks), "ns/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*tasks), "cpu-ns/task")
}

// cpuTime is the CPU time, user and system, of a finished command and of
// the children it waited for (plugins, blocks).
func cpuTime(cmd *exec.Cmd) time.Duration {
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// floorEnv makes the test binary the runbook floor (see runFloor) instead of
// running tests.
const floorEnv = "WEAVE_BENCH_FLOOR"

// BenchmarkRunbookFloor is the floor of BenchmarkStartWorkRunbook: one
// process (this test binary, re-executed) doing the durable work of a
// runbook and nothing else (see runFloor), on the same plan.
func BenchmarkRunbookFloor(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, tasks := range benchTaskCounts(b) {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			plan := truePlan(tasks)
			var total, cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := benchProject(b, plan)
				b.StartTimer()
				start := time.Now()
				cmd := exec.Command(exe, filepath.Join(dir, ".weave", "plans", "bench.md"), filepath.Join(dir, ".weave", "state.json"))
				cmd.Env = append(os.Environ(), floorEnv+"=1")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("floor: %v\n%s", err, tail(out))
				}
				total += time.Since(start)
				cpu += cpuTime(cmd)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*tasks), "ns/task")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*tasks), "cpu-ns/task")
		})
	}
}

// runFloor does, for each unchecked task of the plan at planPath, what any
// runner that records progress durably must: run the block (`sh -e -c
// true`), write a small state file atomically (temp file, fsync, rename,
// fsync of the directory), and make the task's checkbox durable at the
// least cost a one-byte change has: the byte written in place and the file
// fsynced, the plan kept in memory between tasks.
func runFloor(planPath, statePath string) error {
	plan, err := os.ReadFile(planPath)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(planPath, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	box := []byte("- [ ]")
	for task, off := 1, 0; ; task++ {
		i := bytes.Index(plan[off:], box)
		if i < 0 {
			return nil
		}
		off += i + 3 // the space inside the brackets
		if err := exec.Command("sh", "-e", "-c", "true").Run(); err != nil {
			return err
		}
		state := fmt.Sprintf(`{"plan":%q,"task":%d,"attempts":0}`+"\n", planPath, task)
		if err := floorWrite(statePath, []byte(state)); err != nil {
			return err
		}
		plan[off] = 'x'
		if _, err := f.WriteAt(plan[off:off+1], int64(off)); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
}

// floorWrite writes path atomically: temp file, fsync, rename, fsync of the
// directory.
func floorWrite(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".floor-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// statusProject is a project of plans of 50 tasks: WEAVE_BENCH_PLANS of
// them (scripts/bench.sh asks for 1,000), else 20.
func statusProject(b *testing.B) string {
	b.Helper()
	n := 20
	if env := os.Getenv("WEAVE_BENCH_PLANS"); env != "" {
		var err error
		if n, err = strconv.Atoi(env); err != nil || n <= 0 {
			b.Fatalf("WEAVE_BENCH_PLANS=%q: want a number of plans", env)
		}
	}
	dir := benchProject(b, truePlan(50))
	for i := 1; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", fmt.Sprintf("p%04d.md", i)), truePlan(50), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// Plans written an hour ago, as in a project someone works in: a plan
	// written this very second is read again by every listing.
	old := time.Now().Add(-time.Hour)
	files, _ := filepath.Glob(filepath.Join(dir, ".weave", "plans", "*.md"))
	for _, f := range files {
		if err := os.Chtimes(f, old, old); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkStatusProcess measures `weave status` from process start to
// exit on a project of plans of 50 tasks (see statusProject), after a first
// run. BenchmarkStatusGrepFloor is its floor.
func BenchmarkStatusProcess(b *testing.B) {
	bin := weaveBinary(b)
	dir := statusProject(b)
	env := benchEnv(b, bin, dir)
	status := func() {
		cmd := exec.Command(bin, "--dir", dir, "status")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("status: %v\n%s", err, out)
		}
	}
	status() // the second run is the one that counts
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		status()
	}
}

// BenchmarkStatusGrepFloor counts the checkboxes of the same plans with
// `grep -rc`, after a first run.
func BenchmarkStatusGrepFloor(b *testing.B) {
	dir := statusProject(b)
	grep := func() {
		// grep exits 1 when a file has no match; only 2 is an error.
		out, err := exec.Command("grep", "-rc", "--", "- \\[[ x]\\]", filepath.Join(dir, ".weave", "plans")).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
			b.Fatalf("grep: %v\n%s", err, out)
		}
	}
	grep()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		grep()
	}
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}

// noBuiltinHooks is a config that turns every built-in hook off.
const noBuiltinHooks = "disabled_hooks: [weave.start-work, weave.context-window-monitor, weave.keyword-detector, weave.rules-injector, weave.verification-reminder, weave.pattern-md-only, weave.write-existing-file-guard, weave.work-continuation]\n"

// BenchmarkRunbookHooks runs `weave start-work` on a 300-task runbook of
// `true` blocks with the built-in hooks and with all of them off, and
// reports the time per task: the pair says what the built-ins add to a run.
func BenchmarkRunbookHooks(b *testing.B) {
	bin := weaveBinary(b)
	const tasks = 300
	plan := truePlan(tasks)
	for _, tc := range []struct {
		name, config string
	}{
		{"builtins", ""},
		{"no-builtin-hooks", noBuiltinHooks},
	} {
		b.Run(tc.name, func(b *testing.B) { benchStartWork(b, bin, plan, tc.config, tasks) })
	}
}

// BenchmarkFirstTask runs `weave start-work` on a one-task plan, from process
// start to exit, with the built-in hooks (each a plugin process, started as
// the run needs it) and with all of them disabled: the difference is what
// starting the built-ins adds to the first task.
func BenchmarkFirstTask(b *testing.B) {
	bin := weaveBinary(b)
	plan := truePlan(1)
	for _, tc := range []struct {
		name, config string
	}{
		{"builtins", ""},
		{"no-builtin-hooks", noBuiltinHooks},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := benchProject(b, plan)
				if tc.config != "" {
					if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(tc.config), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				cmd := exec.Command(bin, "--dir", dir, "start-work", "bench")
				cmd.Env = benchEnv(b, bin, dir)
				b.StartTimer()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("start-work: %v\n%s", err, out)
				}
			}
		})
	}
}

// benchEnv is the environment of a person's runs in the project dir: their
// own config and state directories, the project's config trusted once with
// `weave trust --yes` as they would (a no-op without a config), outside
// the measured time.
func benchEnv(b *testing.B, bin, dir string) []string {
	b.Helper()
	env := append(os.Environ(), "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+filepath.Join(dir, ".state"), trust.Env+"=")
	cmd := exec.Command(bin, "--dir", dir, "trust", "--yes")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("weave trust --yes: %v\n%s", err, out)
	}
	return env
}
