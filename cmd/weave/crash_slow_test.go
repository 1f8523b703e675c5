//go:build slow

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/plans"
)

// crashPlan has n tasks; each records its effect, then a verify block that
// checks the effect and records that it passed. A task may be ticked only
// after its verify block recorded success.
func crashPlan(n int) string {
	var b strings.Builder
	b.WriteString("# Crash test\r\n\r\nEach task appends to its effect file. Ünïcödé and trailing spaces stay.   \r\n\r\n## TODOs\r\n\r\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] %d. Task number %d  \r\n", i, i)
		fmt.Fprintf(&b, "  ```sh\r\n  mkdir -p effects; echo run >> effects/%d; i=0; while [ $i -lt 200 ]; do i=$((i+1)); done\r\n  ```\r\n", i)
		fmt.Fprintf(&b, "  ```sh verify\r\n  test -s effects/%d && echo ok >> effects/%d.verified\r\n  ```\r\n", i, i)
	}
	return b.String()
}

func TestSlowCrashResume(t *testing.T) {
	const tasks, trials = 12, 60
	bin := buildWeave(t)
	dir := project(t, nil)
	planPath := filepath.Join(dir, ".weave", "plans", "crash.md")
	original := []byte(crashPlan(tasks))
	reset := func() {
		if err := os.WriteFile(planPath, original, 0o644); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Join(dir, "effects"))
		os.Remove(filepath.Join(dir, ".weave", "state.json"))
	}
	reset()

	rng := rand.New(rand.NewPCG(20261122, 1))
	var kills, completions int
	for trial := 0; trial < trials; trial++ {
		// Fault injection, not a timing assertion: the kill follows the
		// run's own progress (a random number of its JSON events, then a
		// random pause of up to 3 ms), so that it lands anywhere in a run —
		// inside a block, between a tick and a state write — on any machine.
		killAfter := rng.IntN(5 * tasks)
		pause := time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
		cmd := exec.Command(bin, "--dir", dir, "start-work", "--json", "crash")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killed := false
		sc := bufio.NewScanner(stdout)
		for events := 0; sc.Scan(); events++ {
			if events == killAfter {
				time.Sleep(pause)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		err = cmd.Wait()
		checkCrashInvariants(t, trial, planPath, original, dir)
		if killed && err != nil {
			kills++
			continue
		}
		if err != nil {
			t.Fatalf("trial %d: weave failed on its own: %v: %s", trial, err, stderr.String())
		}
		completions++
		checkComplete(t, dir, planPath, tasks)
		reset()
	}
	// Finish the last round without interference.
	out, err := exec.Command(bin, "--dir", dir, "start-work", "crash").CombinedOutput()
	if err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	checkCrashInvariants(t, trials, planPath, original, dir)
	checkComplete(t, dir, planPath, tasks)
	t.Logf("%d trials: %d killed, %d completed rounds", trials, kills, completions)
	// The plugins of killed runs die with them (the kernel's parent-death
	// signal), so none is left behind.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := pluginsOf(bin)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugins left running after the host was killed: pids %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if kills < 30 {
		t.Errorf("only %d of %d trials were killed mid-run, want at least 30", kills, trials)
	}
}

// checkCrashInvariants: the plan parses, every byte but checkbox marks is
// as written, and no task is ticked whose verify block did not pass.
func checkCrashInvariants(t *testing.T, trial int, planPath string, original []byte, dir string) {
	t.Helper()
	cur, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatalf("trial %d: read plan: %v", trial, err)
	}
	if len(cur) != len(original) {
		t.Fatalf("trial %d: plan length %d, want %d", trial, len(cur), len(original))
	}
	p := plans.Parse(cur)
	marks := map[int]bool{}
	for _, tk := range p.Tasks {
		marks[tk.Mark] = true
	}
	for i := range cur {
		if cur[i] != original[i] && !marks[i] {
			t.Fatalf("trial %d: byte %d changed (%q -> %q) outside a checkbox", trial, i, original[i], cur[i])
		}
	}
	if len(p.Tasks) != 12 {
		t.Fatalf("trial %d: plan has %d tasks, want 12", trial, len(p.Tasks))
	}
	for _, tk := range p.Tasks {
		if !tk.Done {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "effects", fmt.Sprintf("%d.verified", tk.Number))); err != nil {
			t.Fatalf("trial %d: task %d is ticked but its verify block never passed", trial, tk.Number)
		}
	}
}

func checkComplete(t *testing.T, dir, planPath string, tasks int) {
	t.Helper()
	p, err := plans.Load(planPath)
	if err != nil {
		t.Fatal(err)
	}
	if pr := p.Progress(); !pr.Complete() || pr.Total != tasks {
		t.Fatalf("after a completed run progress = %+v, want %d/%d", pr, tasks, tasks)
	}
	for i := 1; i <= tasks; i++ {
		if _, err := os.Stat(filepath.Join(dir, "effects", fmt.Sprint(i))); err != nil {
			t.Fatalf("task %d's effect never happened: %v", i, err)
		}
	}
	if st, _, err := plans.NewStore(filepath.Join(dir, ".weave")).Load(); err != nil || st != nil {
		t.Fatalf("state after completion = %+v, %v; want cleared", st, err)
	}
}

// pluginsOf lists the live processes running bin as a plugin.
func pluginsOf(bin string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(cmdline, []byte(bin+"\x00__plugin")) {
			continue
		}
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); bytes.Contains(stat, []byte(") Z")) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
