package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// weaveBinary builds weave once for the benchmarks that run it as a process.
func weaveBinary(b *testing.B) string {
	b.Helper()
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

// BenchmarkStartWorkRunbook runs `weave start-work` on a 1,000-task runbook
// plan and reports the time per task.
func BenchmarkStartWorkRunbook(b *testing.B) {
	const tasks = 1000
	bin := weaveBinary(b)
	plan := truePlan(tasks)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := benchProject(b, plan)
		b.StartTimer()
		start := time.Now()
		cmd := exec.Command(bin, "--dir", dir, "start-work", "bench")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("start-work: %v\n%s", err, tail(out))
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*tasks), "ns/task")
}

// floorScript runs n blocks of `true` the way a plain shell loop would, with
// two atomic file writes (temp file, fsync, rename, fsync of the directory)
// for each: the least any runner that records progress durably can do.
const floorScript = `
set -e
n=$1; cd "$2"
for i in $(seq 1 "$n"); do
  sh -e -c true
  printf 'task %s\n' "$i" > state.tmp; sync state.tmp; mv state.tmp state; sync .
  printf 'plan %s\n' "$i" > plan.tmp; sync plan.tmp; mv plan.tmp plan; sync .
done
`

// BenchmarkRunbookFloor is the floor BenchmarkStartWorkRunbook is measured
// against.
func BenchmarkRunbookFloor(b *testing.B) {
	const tasks = 1000
	var total time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		start := time.Now()
		if out, err := exec.Command("bash", "-c", floorScript, "floor", fmt.Sprint(tasks), dir).CombinedOutput(); err != nil {
			b.Fatalf("floor: %v\n%s", err, out)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*tasks), "ns/task")
}

// BenchmarkStatusProcess measures `weave status` from process start to
// exit on a project with 20 plans of 50 tasks.
func BenchmarkStatusProcess(b *testing.B) {
	bin := weaveBinary(b)
	dir := benchProject(b, truePlan(50))
	for i := 0; i < 19; i++ {
		if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", fmt.Sprintf("p%02d.md", i)), truePlan(50), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	env := append(os.Environ(), "XDG_CONFIG_HOME="+dir)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "--dir", dir, "status")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("status: %v\n%s", err, out)
		}
	}
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
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
		{"no-builtin-hooks", "disabled_hooks: [weave.start-work, weave.context-window-monitor, weave.keyword-detector, weave.rules-injector, weave.verification-reminder, weave.pattern-md-only, weave.write-existing-file-guard, weave.work-continuation]\n"},
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
				cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
				b.StartTimer()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("start-work: %v\n%s", err, out)
				}
			}
		})
	}
}
