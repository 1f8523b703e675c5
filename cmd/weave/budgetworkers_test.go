package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/run"
)

// These tests hold a run with workers to its budgets as a lone run is held:
// each task's model calls are checked against its own [budget: $N] and
// charged to it alone, however many tasks run at once; the run's budget is
// shared by all of them; and a call refused over a budget pauses the run
// (exit 3, the reason and the spending in state.json), never a task
// failure that is retried, until `weave budget raise` lets it resume.

// pairPlan is two model tasks that run at once, task 1 with budget one,
// task 2 with budget two ("" for none).
func pairPlan(one, two string) string {
	tag := func(b string) string {
		if b == "" {
			return ""
		}
		return " [budget: " + b + "]"
	}
	return "# Pair\n\n## TODOs\n\n" +
		"- [ ] 1. Write alpha" + tag(one) + "\n  **What**: alpha.txt says alpha.\n  **Files**: `alpha.txt`\n" +
		"- [ ] 2. Write beta" + tag(two) + "\n  **What**: beta.txt says beta.\n  **Files**: `beta.txt`\n"
}

// pairTurns answers each task of pairPlan, whatever order the workers ask
// in and however often a task starts again: write its file, claim it,
// say it is done; every call costs $0.20 at fakePrices.
func pairTurns() []modeltest.Turn {
	var turns []modeltest.Turn
	for n, name := range []string{"alpha", "beta"} {
		match := name + ".txt says " + name
		claim := tool("plan_check", fmt.Sprintf(`{"plan":"pair","task":%d}`, n+1))
		claim.AfterTool = "wrote"
		done := modeltest.Turn{Text: "Done."}
		done.AfterTool = "passed its verify blocks"
		write := tool("write", fmt.Sprintf(`{"path":"%s.txt","content":"%s\n"}`, name, name))
		for _, turn := range []modeltest.Turn{claim, done, write} {
			turn = paid(turn)
			turn.Match, turn.Default = match, true
			turns = append(turns, turn)
		}
	}
	return turns
}

// pairProject is a git repository with pairPlan(one, two) and the fake
// model's prices.
func pairProject(t *testing.T, one, two string) string {
	t.Helper()
	return workersRepo(t, map[string]string{"pair": pairPlan(one, two)}, map[string]string{filepath.Join(".weave", "config.yaml"): fakePrices})
}

// failures is what each task.failed event of a --json run says.
func failures(t *testing.T, out string) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range events(t, out) {
		if ev.Type == run.EventTaskFailed {
			fmt.Fprintf(&b, "task %d: %s\n", ev.Task, ev.Error)
		}
	}
	return b.String()
}

// failedTasks says which tasks failed (task.failed) in a --json run: a
// budget's refusal is not a failure.
func failedTasks(t *testing.T, out string) []int {
	t.Helper()
	var failed []int
	for _, ev := range events(t, out) {
		if ev.Type == run.EventTaskFailed {
			failed = append(failed, ev.Task)
		}
	}
	return failed
}

func TestWorkersTaskBudgetPausesThatTaskAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	// Task 1's $0.30 holds its first call ($0.20) and not the worst case
	// of its second; task 2's $5 holds all three of its calls.
	dir := pairProject(t, "$0.30", "$5")
	srv := modeltest.NewServer(t, pairTurns()...)
	env := moneyEnv(t, srv)
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "pair", "--workers", "2", "--infer-deps", "--json")
	if code != exitPaused {
		t.Fatalf("start-work --workers 2 = %d, want 3 (paused)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if f := failedTasks(t, out); len(f) > 0 {
		t.Errorf("tasks %v failed; a budget's refusal pauses the run, nothing is retried\n%s", f, failures(t, out))
	}
	if !strings.Contains(errOut, "task 1 (Write alpha)'s budget of $0.3000") || !strings.Contains(errOut, "--task 1") {
		t.Errorf("stderr does not name task 1's budget and how to raise it:\n%s", errOut)
	}
	st := stateOf(t, dir)
	if st == nil || !st.Paused || st.Spending == nil {
		t.Fatalf("state = %+v, want paused with its spending", st)
	}
	sp := st.Spending
	if !strings.Contains(st.PausedReason, "task 1 (Write alpha)'s budget") || sp.PausedBy != "task" || sp.PausedTask != "1" {
		t.Errorf("paused reason %q, by %q task %q; want task 1's budget", st.PausedReason, sp.PausedBy, sp.PausedTask)
	}
	// Task 1 made one call; task 2's calls, made beside it, are its own.
	if got := sp.TasksUSD["1"]; math.Abs(got-0.2) > 1e-9 {
		t.Errorf("task 1 spent %v, want 0.20: its one call, none of task 2's (spending %+v)", got, sp)
	}
	two := sp.TasksUSD["2"]
	if two <= 0 || two > 0.6+1e-9 || math.Abs(sp.RunUSD-0.2-two) > 1e-9 {
		t.Errorf("task 2 spent %v of a run's %v, want its own calls, the run the sum of both (spending %+v)", two, sp.RunUSD, sp)
	}
	if st.Tasks["1"] != nil && st.Tasks["1"].Attempts > 0 {
		t.Errorf("task 1's record %+v: an attempt refused over a budget is not counted", st.Tasks["1"])
	}

	if r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "budget", "raise", "--task", "1", "$1"); r.code != 0 {
		t.Fatalf("budget raise --task 1: exit %d\n%s", r.code, r.err)
	}
	code, out, errOut = runWeave(t, bin, dir, env, "start-work", "--workers", "2", "--infer-deps", "--json")
	if code != 0 {
		t.Fatalf("after the raise: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if p := planOf(t, dir, "pair"); strings.Count(p, "- [x]") != 2 {
		t.Errorf("plan after the resumed run:\n%s\nwant both tasks ticked", p)
	}
	for _, f := range []string{"alpha", "beta"} {
		if got := gitIn(t, dir, "show", "weave/pair:"+f+".txt"); got != f {
			t.Errorf("%s.txt on weave/pair = %q", f, got)
		}
	}
	for _, ev := range events(t, out) {
		if ev.Type == run.EventTaskDone && ev.Task == 1 && (ev.CostUSD == nil || *ev.CostUSD < 0.8-1e-9) {
			t.Errorf("task 1's task.done costs %v, want its calls of both runs (0.20 + 0.60)", show(ev.CostUSD))
		}
	}
}

func TestWorkersRunBudgetCrossedByTwoPauses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := pairProject(t, "", "")
	srv := modeltest.NewServer(t, pairTurns()...)
	env := moneyEnv(t, srv)
	// $0.70: each task's first call fits beside the other's, and the two
	// tasks cannot make their six calls ($1.20) within it. (The scripted
	// use is more than the worst case estimated from the request's bytes,
	// so the figures may pass the budget by up to a call each.)
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "pair", "--workers", "2", "--infer-deps", "--budget", "$0.70", "--json")
	if code != exitPaused {
		t.Fatalf("start-work --workers 2 --budget $0.70 = %d, want 3 (paused)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if f := failedTasks(t, out); len(f) > 0 {
		t.Errorf("tasks %v failed; a budget's refusal pauses the run, nothing is retried", f)
	}
	st := stateOf(t, dir)
	if st == nil || !st.Paused || st.Spending == nil {
		t.Fatalf("state = %+v, want paused with its spending", st)
	}
	sp := st.Spending
	if !strings.Contains(st.PausedReason, "the run's budget of $0.7000") || !strings.Contains(st.PausedReason, "spent: run $") || sp.PausedBy != "run" {
		t.Errorf("paused reason %q, by %q; want the run's budget with the spending", st.PausedReason, sp.PausedBy)
	}
	// Both tasks spent; neither made all its calls.
	one, two := sp.TasksUSD["1"], sp.TasksUSD["2"]
	if one <= 0 || two <= 0 || sp.RunUSD >= 1.2-1e-9 || math.Abs(sp.RunUSD-one-two) > 1e-9 {
		t.Errorf("spending %+v: want both tasks' calls charged to each, the run the sum of both, short of all six calls", sp)
	}
	for k, rec := range st.Tasks {
		if rec != nil && rec.Attempts > 0 {
			t.Errorf("task %s's record %+v: no attempt counted", k, rec)
		}
	}

	if r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "budget", "raise", "5"); r.code != 0 {
		t.Fatalf("budget raise: exit %d\n%s", r.code, r.err)
	}
	code, out, errOut = runWeave(t, bin, dir, env, "start-work", "--workers", "2", "--infer-deps")
	if code != 0 {
		t.Fatalf("after the raise: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if p := planOf(t, dir, "pair"); strings.Count(p, "- [x]") != 2 {
		t.Errorf("plan after the resumed run:\n%s\nwant both tasks ticked", p)
	}
}
