package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/host/model/modeltest"
)

// These tests keep a run's shared budget exact for tasks run by `weave
// worker`s at once: before each model call the worker asks the
// coordinator to hold the call's worst case in the run's own ledger, and
// the call is made only once the hold is granted; a coordinator that
// cannot be reached for it means the call is not made.

// farPair is pairPlan's two tasks, each needing a label only the remote
// worker offers, without a task budget: only the run's holds.
const farPair = "# Pair\n\n## TODOs\n\n" +
	"- [ ] 1. Write alpha [needs: far]\n  **What**: alpha.txt says alpha.\n  **Files**: `alpha.txt`\n" +
	"- [ ] 2. Write beta [needs: far]\n  **What**: beta.txt says beta.\n  **Files**: `beta.txt`\n"

// modelCalls counts the chat calls the fake model served.
func modelCalls(srv *modeltest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "chat/completions") || strings.Contains(r.Path, "messages") {
			n++
		}
	}
	return n
}

// TestRemoteTasksAtOnceHoldTheRunBudget: two tasks run at once on a remote
// worker, under a run budget of $0.20 that admits one call's worst case
// (its input, about $0.02, and $0.10 of output) and never two. Each task
// was offered with the whole $0.20 left; yet exactly one model call is
// made, the other is refused by the coordinator's ledger, the run pauses
// (exit 3) on the run's budget, and the figures never pass $0.20 (the fake
// model says each call cost $0.20, more than its worst case: a settle is
// charged no more than its hold).
func TestRemoteTasksAtOnceHoldTheRunBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	srv := modeltest.NewServer(t, pairTurns()...)
	wp := startModelWorker(t, url, "far", srv, "--slots", "2")
	dir := workersRepo(t, map[string]string{"pair": farPair}, map[string]string{filepath.Join(".weave", "config.yaml"): fakePrices})
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "pair", "--workers", "2", "--infer-deps", "--budget", "0.20", "--bus", url, "--json")
	if code != exitPaused {
		t.Fatalf("start-work = %d, want 3 (paused)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if n := modelCalls(srv); n != 1 {
		wp.mu.Lock()
		t.Logf("worker: %s\nlogs: %s", strings.Join(wp.all, "\n"), filesUnder(t, filepath.Join(dir, ".weave", "logs")))
		wp.mu.Unlock()
		t.Errorf("the model was called %d times, want exactly 1: the run's $0.20 admits one call's worst case", n)
	}
	if f := failedTasks(t, out); len(f) > 0 {
		t.Errorf("tasks %v failed; a refused hold pauses the run", f)
	}
	if !strings.Contains(errOut, "the run's budget of $0.2000") {
		t.Errorf("stderr does not name the run's budget:\n%s", errOut)
	}
	awarded := map[int]bool{}
	for _, ev := range events(t, out) {
		if ev.Type == "work.awarded" && ev.WorkerName == "far" {
			awarded[ev.Task] = true
		}
	}
	if !awarded[1] || !awarded[2] {
		t.Fatalf("both tasks were not awarded to the remote worker: %v\n%s", awarded, out)
	}
	st := stateOf(t, dir)
	if st == nil || !st.Paused || st.Spending == nil {
		t.Fatalf("state = %+v, want paused with its spending", st)
	}
	sp := st.Spending
	if sp.PausedBy != "run" {
		t.Errorf("paused by %q, want the run's budget", sp.PausedBy)
	}
	if sp.RunUSD > 0.20+1e-9 || sp.RunUSD < 0.1 {
		t.Errorf("run spent $%v, want the one call's worst case at least, never past $0.20", sp.RunUSD)
	}
}

// TestRemoteHoldFailsClosed: a worker whose NATS user may not publish on
// its hold subject cannot reach the coordinator for a hold: its model call
// is refused, never made, and the task does not pass for done.
func TestRemoteHoldFailsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	// The documented accounts without the hold subject for worker1.
	ns := bustest.StartNATSConfig(t, strings.Replace(workerAccounts, `"weave.hold.*.worker1", `, "", 1))
	host := strings.TrimPrefix(ns.URL(), "nats://")
	srv := modeltest.NewServer(t, remoteTurns()...)
	w := startModelWorker(t, "nats://worker1:worker-pw-222@"+host, "worker1", srv)
	dir := workersRepo(t, map[string]string{"pair": remotePair("$5")}, map[string]string{
		filepath.Join(".weave", "config.yaml"): fakePrices + "run:\n  lease: 2s\nrunbook:\n  retries: 0\n"})
	start := time.Now()
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "pair", "--workers", "2", "--bus", "nats://coordinator:coord-pw-111@"+host, "--json")
	if code == 0 {
		t.Fatalf("start-work = 0 with a worker that cannot hold its calls\nstdout: %s\nstderr: %s", out, errOut)
	}
	if n := modelCalls(srv); n != 0 {
		t.Errorf("the model was called %d times without a hold, want none", n)
	}
	if p := planOf(t, dir, "pair"); strings.Contains(p, "- [x]") {
		t.Errorf("the task was ticked:\n%s", p)
	}
	w.mu.Lock()
	logs := out + errOut + strings.Join(w.all, "\n") + filesUnder(t, filepath.Join(dir, ".weave", "logs"))
	w.mu.Unlock()
	if !strings.Contains(logs, "could not be reached to hold") {
		t.Errorf("nothing says the coordinator could not be reached for the hold:\n%s", logs)
	}
	t.Logf("run took %s", time.Since(start))
}

// filesUnder is the text of every file under root.
func filesUnder(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			b.Write(data)
			b.WriteByte('\n')
		}
		return nil
	})
	return b.String()
}
