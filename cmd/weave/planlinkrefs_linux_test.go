package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// linkRefPlan is a plan with one task and n link reference definitions.
func linkRefPlan(n int) string {
	var b strings.Builder
	b.WriteString("# Refs\n\n## TODOs\n\n- [ ] 1. The task\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "[l%d]: http://x/%d\n", i, i)
	}
	return b.String()
}

// A plan of 400,000 link reference definitions is listed at once. Goldmark's
// own handling of definitions is quadratic: 200,000 took 57 s to list, so
// 400,000 take minutes; linear, it takes about a second. The deadline is
// generous for a loaded machine, and far below the quadratic time.
func TestPlanListManyLinkRefs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and parses a 12 MB plan")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"refs": linkRefPlan(400_000)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--dir", dir, "plan", "list", "--json")
	cmd.Env = cleanEnv(t)
	r := runCmd(t, cmd)
	if ctx.Err() != nil {
		t.Fatalf("plan list of 400,000 link reference definitions did not finish within 30 s (quadratic parse)")
	}
	if r.code != exitOK {
		t.Fatalf("plan list = %d %q", r.code, r.err)
	}
	var list []planEntry
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list) != 1 {
		t.Fatalf("plan list --json = %q: %v", r.out, err)
	}
	if e := list[0]; e.Name != "refs" || e.Invalid != "" {
		t.Fatalf("plan list = %+v, want the refs plan, valid", e)
	}
}

// SIGTERM while weave parses a huge plan ends it promptly. The plan, just
// under MaxPlanSize, took the quadratic parse about half an hour, during
// which the signal was caught and ignored until the parse ended; now the
// parse is linear and looks at the signal's context between definitions.
func TestPlanListEndsOnSIGTERMMidParse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and parses a 31 MB plan")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"refs": linkRefPlan(1_100_000)})
	cmd := exec.Command(bin, "--dir", dir, "plan", "list")
	cmd.Env = cleanEnv(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	// Wait until weave is well into its work (past installing its signal
	// handling, reading or parsing the plan): 300 ms of CPU. A linear parse
	// may finish first, which is as good.
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for runningCPU(t, cmd.Process.Pid) < 300*time.Millisecond {
		select {
		case <-exited:
			return
		case <-poll.C:
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("weave plan list still parsing 10 s after SIGTERM")
	}
}

// runningCPU is the user and system CPU time process pid has used so far.
func runningCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0 // exited: the caller sees it on the Wait channel
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 14th and 15th fields of the line, in clock ticks (100/s).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat = %q", pid, b)
	}
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return time.Duration(u+s) * 10 * time.Millisecond
}
