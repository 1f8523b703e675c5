package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/run"
)

// These tests hold a task run by a `weave worker` over NATS to the
// coordinator's budgets, as a task of the run's own workers is held: the
// offer carries what the task may still spend, the worker's run of it
// refuses a model call that could cross that, the result says what it
// spent, and the coordinator charges it and pauses the run (exit 3) until
// `weave budget raise`.

// remotePair is pairPlan's task 1 alone, with budget one, needing a label
// only the remote worker offers: the run's own workers cannot take it.
func remotePair(one string) string {
	return "# Pair\n\n## TODOs\n\n" +
		"- [ ] 1. Write alpha [budget: " + one + "] [needs: far]\n  **What**: alpha.txt says alpha.\n  **Files**: `alpha.txt`\n"
}

// remoteTurns answers task 1 of remotePair as the worker asks, however
// often it starts again: write alpha.txt, claim the task, say it is done
// once claimed; every call costs $0.20 at fakePrices.
func remoteTurns() []modeltest.Turn {
	claim := tool("plan_check", `{"plan":"pair","task":1}`)
	claim.AfterTool = "wrote"
	// A worker's plan_check claims the task; the coordinator ticks it.
	done := modeltest.Turn{Text: "Done."}
	done.AfterTool = "passed its verify blocks"
	write := tool("write", `{"path":"alpha.txt","content":"alpha\n"}`)
	var turns []modeltest.Turn
	for _, turn := range []modeltest.Turn{claim, done, write} {
		turn = paid(turn)
		turn.Match, turn.Default = "alpha.txt says alpha", true
		turns = append(turns, turn)
	}
	return turns
}

// startModelWorker starts the built weave as a worker labelled far on the
// bus at url, with the fake model behind srv and its price in the
// worker's user config (the task runs under the worker's config).
func startModelWorker(t *testing.T, url, name string, srv *modeltest.Server, args ...string) *workerProc {
	t.Helper()
	env := append(moneyEnv(t, srv), "WEAVE_SANDBOX_MODE=off")
	xdg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdg, "weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "weave", "config.yaml"), []byte(fakePrices), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(env, "XDG_CONFIG_HOME="+xdg)
	return startWorkerEnv(t, env, url, name, append([]string{"--labels", "far"}, args...)...)
}

func TestRemoteTaskBudgetPausesAndRaiseResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	srv := modeltest.NewServer(t, remoteTurns()...)
	startModelWorker(t, url, "far", srv)
	// Task 1's $0.30 holds its first call ($0.20) and not the worst case
	// of its second ($0.20 + $0.10 of output and its input).
	dir := workersRepo(t, map[string]string{"pair": remotePair("$0.30")}, map[string]string{filepath.Join(".weave", "config.yaml"): fakePrices})
	env := cleanEnv(t)
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "pair", "--workers", "2", "--bus", url, "--json")
	if code != exitPaused {
		t.Fatalf("start-work with a remote task over its budget = %d, want 3 (paused)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if f := failedTasks(t, out); len(f) > 0 {
		t.Errorf("tasks %v failed; a budget's refusal on a worker pauses the run, nothing is retried", f)
	}
	if !strings.Contains(errOut, "task 1 (Write alpha)'s budget of $0.3000") || !strings.Contains(errOut, "--task 1") {
		t.Errorf("stderr does not name task 1's budget and how to raise it:\n%s", errOut)
	}
	awarded := false
	for _, ev := range events(t, out) {
		if ev.Type == "work.awarded" && ev.Task == 1 && ev.WorkerName == "far" {
			awarded = true
		}
	}
	if !awarded {
		t.Fatalf("task 1 was not awarded to the remote worker:\n%s", out)
	}
	st := stateOf(t, dir)
	if st == nil || !st.Paused || st.Spending == nil {
		t.Fatalf("state = %+v, want paused with its spending", st)
	}
	sp := st.Spending
	if sp.PausedBy != "task" || sp.PausedTask != "1" {
		t.Errorf("paused by %q task %q; want task 1's budget", sp.PausedBy, sp.PausedTask)
	}
	if math.Abs(sp.TasksUSD["1"]-0.2) > 1e-9 || math.Abs(sp.RunUSD-0.2) > 1e-9 {
		t.Errorf("spending %+v, want the remote task's one call ($0.20) in the task's and the run's figures", sp)
	}
	if r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "budget", "show"); r.code != 0 || !strings.Contains(r.out, "0.2000") {
		t.Errorf("budget show = %d, want the remote spend ($0.2000):\n%s%s", r.code, r.out, r.err)
	}
	if r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "status"); !strings.Contains(r.out+r.err, "task 1 $0.2000 of $0.3000") {
		t.Errorf("status does not show the remote task's spend against its budget:\n%s%s", r.out, r.err)
	}
	if r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "budget", "raise", "--task", "1", "$1"); r.code != 0 {
		t.Fatalf("budget raise --task 1: exit %d\n%s", r.code, r.err)
	}
	code, out, errOut = runWeave(t, bin, dir, env, "start-work", "--workers", "2", "--bus", url, "--json")
	if code != 0 {
		t.Fatalf("after the raise: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if p := planOf(t, dir, "pair"); strings.Count(p, "- [x]") != 1 {
		t.Errorf("plan after the resumed run:\n%s\nwant the task ticked", p)
	}
	if got := gitIn(t, dir, "show", "weave/pair:alpha.txt"); got != "alpha" {
		t.Errorf("alpha.txt on weave/pair = %q", got)
	}
	// The second run's three calls ($0.60) come on top of the first's.
	done := false
	for _, ev := range events(t, out) {
		if ev.Type == run.EventTaskDone && ev.Task == 1 {
			done = true
			if ev.CostUSD == nil || math.Abs(*ev.CostUSD-0.8) > 1e-9 {
				t.Errorf("task 1's task.done costs %v, want its remote calls of both runs (0.20 + 0.60)", show(ev.CostUSD))
			}
		}
	}
	if !done {
		t.Errorf("no task.done for task 1:\n%s", out)
	}
}

// TestBusRunLocalTaskKeepsItsBudget: in a run coordinated over NATS, a task
// the run's own workers take through the bus is held to its budget as in a
// run without one: task 1's $0.30 pauses the run (exit 3) after its first
// call, and task 2's calls are not charged to it.
func TestBusRunLocalTaskKeepsItsBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	dir := pairProject(t, "$0.30", "$5")
	srv := modeltest.NewServer(t, pairTurns()...)
	code, out, errOut := runWeave(t, bin, dir, moneyEnv(t, srv), "start-work", "pair", "--workers", "2", "--infer-deps", "--bus", url, "--json")
	if code != exitPaused {
		t.Fatalf("start-work --bus = %d, want 3 (paused)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "task 1 (Write alpha)'s budget of $0.3000") {
		t.Errorf("stderr does not name task 1's budget:\n%s", errOut)
	}
	st := stateOf(t, dir)
	if st == nil || st.Spending == nil || st.Spending.PausedTask != "1" || math.Abs(st.Spending.TasksUSD["1"]-0.2) > 1e-9 {
		t.Fatalf("state %+v, want paused by task 1 with its one call ($0.20) charged to it", st)
	}
}
