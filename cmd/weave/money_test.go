package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/run"
)

// These tests run weave as a process against the fake model server with
// scripted token use: what each call, task and session cost is computed
// from it and shown, a model without a price shows its cost as unknown,
// and the budgets pause a run (exit 3) before a call that could cross them,
// a raise or a higher --budget resuming it. A hostile model cannot raise
// or reset a budget.

// fakePrices prices the fake model: $10 a million input tokens, $100 a
// million output tokens, $1 a million cache reads.
const fakePrices = "prices:\n  fake-model:\n    input: 10\n    output: 100\n    cache_read: 1\n"

// spend is a turn's token use that costs $0.20 at fakePrices: 10,000 in
// ($0.10) and 1,000 out ($0.10).
var spend = &modeltest.Usage{Input: 10000, Output: 1000}

// paid is turn t with the token use spend.
func paid(t modeltest.Turn) modeltest.Turn {
	t.Usage = spend
	return t
}

// moneyProject is a project with plans and config (written to
// .weave/config.yaml).
func moneyProject(t *testing.T, planFiles map[string]string, config string) string {
	t.Helper()
	dir := project(t, planFiles)
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// moneyEnv is chatEnv with answers bounded at 1,000 tokens: a call's worst
// case is then its input and $0.10 of output at fakePrices.
func moneyEnv(t *testing.T, srv *modeltest.Server) []string {
	return append(chatEnv(t, srv), "WEAVE_MODEL_MAX_TOKENS=1000")
}

// event is what the tests read of a --json event.
type event struct {
	Type    string   `json:"type"`
	Task    int      `json:"task"`
	Reason  string   `json:"reason"`
	CostUSD *float64 `json:"cost_usd"`
}

func moneyEvents(t *testing.T, out string) []event {
	t.Helper()
	var evs []event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) < 1e-9
}

func show(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

const twoTasks = `# Two

## TODOs

- [ ] 1. Write one
  **What**: one.txt says one.
- [ ] 2. Write two
  **What**: two.txt says two.
`

func TestCostsFromScriptedUsage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := moneyProject(t, map[string]string{"two": twoTasks}, fakePrices)
	srv := modeltest.NewServer(t,
		// 60,000 in of which 40,000 from the cache (the OpenAI wire
		// counts them in the input): $0.20 + $0.04, and 2,000 out: $0.20.
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "write", Args: `{"path":"one.txt","content":"one\n"}`}},
			Usage: &modeltest.Usage{Input: 60000, Output: 2000, CacheRead: 40000}},
		paid(tool("plan_check", `{"task":1}`)),
		paid(modeltest.Turn{Text: "Task 1 is done."}),
		paid(tool("plan_check", `{"task":2}`)),
		paid(modeltest.Turn{Text: "Task 2 is done."}),
	)
	code, out, errOut := runWeave(t, bin, dir, moneyEnv(t, srv), "start-work", "two", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var calls, tasks []*float64
	for _, ev := range moneyEvents(t, out) {
		switch ev.Type {
		case "model.usage":
			calls = append(calls, ev.CostUSD)
		case "task.done":
			tasks = append(tasks, ev.CostUSD)
		}
	}
	wantCalls := []float64{0.44, 0.2, 0.2, 0.2, 0.2}
	if len(calls) != len(wantCalls) {
		t.Fatalf("%d model.usage events, want %d", len(calls), len(wantCalls))
	}
	for i, w := range wantCalls {
		if !near(calls[i], w) {
			t.Errorf("model.usage %d cost_usd = %v, want %v", i+1, show(calls[i]), w)
		}
	}
	if len(tasks) != 2 || !near(tasks[0], 0.84) || !near(tasks[1], 0.4) {
		t.Errorf("task.done cost_usd = %v, want 0.84 and 0.4", tasks)
	}

	var list []struct {
		ID        string   `json:"id"`
		TotalCost *float64 `json:"total_cost_usd"`
	}
	r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "sessions", "list", "--json")
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list) != 1 {
		t.Fatalf("sessions list --json = %s (%v), want one session", r.out, err)
	}
	if !near(list[0].TotalCost, 1.24) {
		t.Errorf("sessions list total_cost_usd = %v, want 1.24", show(list[0].TotalCost))
	}
	r = runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "sessions", "show", list[0].ID)
	for _, want := range []string{"COST", "$1.24", "· $0.4400 (60,000 in, 2,000 out, 40,000 cache read", "· $0.2000 (10,000 in"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, r.out)
		}
	}
	// The transcript holds each call's cost.
	transcript := readFile(t, filepath.Join(dir, ".weave", "sessions", list[0].ID+".jsonl"))
	if !strings.Contains(transcript, `"cost_usd":0.44`) {
		t.Errorf("transcript has no cost_usd 0.44 on its first usage line:\n%s", transcript)
	}
}

func TestUnknownPriceIsShownAsUnknown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := moneyProject(t, map[string]string{"greeting": prosePlan}, "")
	srv := modeltest.NewServer(t,
		paid(tool("plan_check", `{"task":1}`)),
		paid(modeltest.Turn{Text: "Done."}),
	)
	code, out, errOut := runWeave(t, bin, dir, moneyEnv(t, srv), "start-work", "greeting", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, ev := range moneyEvents(t, out) {
		if (ev.Type == "model.usage" || ev.Type == "task.done") && ev.CostUSD != nil {
			t.Errorf("%s cost_usd = %v for a model without a price, want none (unknown)", ev.Type, *ev.CostUSD)
		}
	}
	var list []struct {
		ID        string           `json:"id"`
		TotalCost *json.RawMessage `json:"total_cost_usd"`
	}
	r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "sessions", "list", "--json")
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list) != 1 {
		t.Fatalf("sessions list --json = %s (%v)", r.out, err)
	}
	if !strings.Contains(r.out, `"total_cost_usd": null`) {
		t.Errorf("sessions list --json = %s, want total_cost_usd null", r.out)
	}
	r = runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "sessions", "show", list[0].ID)
	if !strings.Contains(r.out, "· ? (10,000 in") || strings.Contains(r.out, "$0.0000") {
		t.Errorf("sessions show = %s, want each call's cost as ? and never $0", r.out)
	}
}

func TestRunBudgetPausesMidTaskAndRaiseResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := moneyProject(t, map[string]string{"two": twoTasks}, fakePrices)
	srv := modeltest.NewServer(t,
		paid(tool("write", `{"path":"one.txt","content":"one\n"}`)),
		paid(tool("plan_check", `{"task":1}`)),
		paid(modeltest.Turn{Text: "Task 1 is done."}),
		paid(tool("plan_check", `{"task":2}`)),
		paid(modeltest.Turn{Text: "Task 2 is done."}),
	)
	env := moneyEnv(t, srv)
	// $0.25: the first call ($0.20) fits; the second's worst case (more
	// than the $0.10 of its max_tokens) would cross it.
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "two", "--budget", "$0.25")
	if code != exitPaused {
		t.Fatalf("exit %d, want 3 (paused)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the call that could cross the budget is not made", n)
	}
	if got := readFile(t, filepath.Join(dir, "one.txt")); got != "one\n" {
		t.Errorf("one.txt = %q: the tool call before the pause must finish", got)
	}
	for _, want := range []string{"paused: budget:", "run's budget of $0.2500", "spent: run $0.2000", "weave budget raise"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	st := stateOf(t, dir)
	if st == nil || !st.Paused || !strings.Contains(st.PausedReason, "budget") || st.Spending == nil || math.Abs(st.Spending.RunUSD-0.2) > 1e-9 || st.Spending.PausedBy != "run" {
		t.Fatalf("state = %+v (spending %+v), want paused on the run's budget with $0.20 spent", st, st.Spending)
	}
	status := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "status", "--json")
	var sj struct {
		Cost     *float64 `json:"cost_usd"`
		Spending struct {
			RunUSD float64 `json:"run_usd"`
		} `json:"spending"`
	}
	if err := json.Unmarshal([]byte(status.out), &sj); err != nil || !near(sj.Cost, 0.2) || sj.Spending.RunUSD != 0.2 {
		t.Errorf("status --json = %s (%v), want cost_usd 0.2 and spending.run_usd 0.2", status.out, err)
	}

	status = runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "status")
	if !strings.Contains(status.err, "two: cost $0.2000; run $0.2000 of $0.2500") {
		t.Errorf("status (piped) stderr = %q, want the active plan's cost and run budget", status.err)
	}

	// A resumed run keeps its budget and what it spent: it pauses at once.
	code, _, errOut = runWeave(t, bin, dir, env, "start-work")
	if code != exitPaused || len(srv.Requests()) != 1 {
		t.Fatalf("resume without a raise: exit %d, %d requests, want 3 and no new request\nstderr: %s", code, len(srv.Requests()), errOut)
	}
	r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "budget", "raise", "2")
	if r.code != 0 {
		t.Fatalf("budget raise: exit %d\n%s", r.code, r.err)
	}
	if st := stateOf(t, dir); len(st.Spending.Raises) != 1 || st.Spending.Raises[0].Scope != "run" || st.Spending.Raises[0].USD != 2 {
		t.Errorf("raises = %+v, want the run's raised by 2", st.Spending.Raises)
	}
	code, out, errOut = runWeave(t, bin, dir, env, "start-work")
	if code != 0 {
		t.Fatalf("after the raise: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("%d model requests in all, want 5", n)
	}
}

const taggedPlan = `# Tagged

## TODOs

- [ ] 1. Write one [budget: $0.30]
  **What**: one.txt says one.
`

func TestTaskBudgetPausesAndItsRaiseResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := moneyProject(t, map[string]string{"tagged": taggedPlan}, fakePrices)
	srv := modeltest.NewServer(t,
		paid(tool("write", `{"path":"one.txt","content":"one\n"}`)),
		paid(tool("plan_check", `{"task":1}`)),
		paid(modeltest.Turn{Text: "Task 1 is done."}),
	)
	env := moneyEnv(t, srv)
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "tagged", "--json")
	if code != exitPaused {
		t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var paused *event
	for _, ev := range moneyEvents(t, out) {
		if ev.Type == "plan.paused" {
			paused = &ev
		}
	}
	if paused == nil || !strings.Contains(paused.Reason, "task 1 (Write one)'s budget of $0.3000") || !strings.Contains(paused.Reason, "--task 1") {
		t.Errorf("plan.paused = %+v, want the task's budget named with how to raise it", paused)
	}
	if st := stateOf(t, dir); st.Spending.PausedBy != "task" || st.Spending.PausedTask != "1" || st.Spending.TaskBudgets["1"] != 0.3 {
		t.Errorf("spending = %+v, want paused by task 1's $0.30", st.Spending)
	}
	if r := runBinary(t, bin, []string{"WEAVE_TRUST=1"}, "", "--dir", dir, "budget", "raise", "--task", "1", "$1"); r.code != 0 {
		t.Fatalf("budget raise --task 1: exit %d\n%s", r.code, r.err)
	}
	code, out, errOut = runWeave(t, bin, dir, env, "start-work")
	if code != 0 {
		t.Fatalf("after the raise: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

func TestWorstCaseRefusesACallThatCouldOvershoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := moneyProject(t, map[string]string{"greeting": prosePlan}, fakePrices)
	// The call would cost $0.0002, but its max_tokens of 100,000 could
	// cost $10 as output: under a $5 budget it is not made.
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "cheap", Usage: &modeltest.Usage{Input: 10, Output: 1}})
	env := append(chatEnv(t, srv), "WEAVE_MODEL_MAX_TOKENS=100000")
	code, _, errOut := runWeave(t, bin, dir, env, "start-work", "greeting", "--budget", "5")
	if code != exitPaused {
		t.Fatalf("exit %d, want 3\nstderr: %s", code, errOut)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
	if !strings.Contains(errOut, "could cost up to $10.0") {
		t.Errorf("stderr = %s, want the call's worst case named", errOut)
	}
}

func TestBudgetRefusesAModelWithoutAPrice(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := moneyProject(t, map[string]string{"greeting": prosePlan}, "")
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "hi", Default: true})
	code, out, errOut := runWeave(t, bin, dir, moneyEnv(t, srv), "chat", "-p", "hello", "--budget", "$5")
	if code != exitPaused {
		t.Fatalf("chat: exit %d, want 3\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if n := len(srv.Requests()); n != 0 || !strings.Contains(errOut, `"fake-model" has no known price`) || !strings.Contains(errOut, "prices") {
		t.Errorf("%d requests, stderr %s; want none made and a message saying to add a price", n, errOut)
	}
	code, _, errOut = runWeave(t, bin, dir, moneyEnv(t, srv), "start-work", "greeting", "--budget", "$5")
	if code != exitPaused || len(srv.Requests()) != 0 || !strings.Contains(errOut, "no known price") {
		t.Errorf("start-work: exit %d, %d requests, stderr %s; want 3, none and the price named", code, len(srv.Requests()), errOut)
	}
}

func TestChatCostsInJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := moneyProject(t, nil, fakePrices)
	srv := modeltest.NewServer(t, paid(modeltest.Turn{Text: "hello"}))
	code, out, errOut := runWeave(t, bin, dir, moneyEnv(t, srv), "chat", "-p", "hi", "--json", "--budget", "1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var found bool
	for _, ev := range moneyEvents(t, out) {
		if ev.Type == "model.usage" {
			found = near(ev.CostUSD, 0.2)
		}
	}
	if !found {
		t.Errorf("chat --json = %s, want model.usage with cost_usd 0.2", out)
	}
}

// TestHostileModelCannotRaiseOrResetABudget: a model under a task budget
// rewrites state.json's figures (with write, and with bash), raises its
// task's tag in the plan and asks weave to raise the budget. The run
// pauses where the budget says, and a resumed run still holds it.
func TestHostileModelCannotRaiseOrResetABudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := strings.Replace(taggedPlan, "[budget: $0.30]", "[budget: $1]", 1)
	dir := moneyProject(t, map[string]string{"tagged": plan}, fakePrices+"sandbox:\n  mode: off\n")
	forged := `{"schema_version":1,"active_plan":"` + filepath.Join(dir, ".weave", "plans", "tagged.md") + `","plan_name":"tagged","agent":"tapestry","spending":{"run_usd":0,"plan_usd":0,"tasks_usd":{"1":0},"task_budgets_usd":{"1":1000}}}`
	raised := strings.Replace(plan, "[budget: $1]", "[budget: $1000]", 1)
	args, _ := json.Marshal(map[string]string{"path": ".weave/state.json", "content": forged})
	bash, _ := json.Marshal(map[string]string{"command": "printf '%s' '" + forged + "' > .weave/state.json; " + bin + " budget raise --task 1 1000; sed -i 's/budget: [$]1]/budget: $1000]/' .weave/plans/tagged.md; true"})
	edit, _ := json.Marshal(map[string]string{"path": ".weave/plans/tagged.md", "content": raised})
	srv := modeltest.NewServer(t,
		paid(modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "write", Args: string(args)}}}),
		paid(modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "bash", Args: string(bash)}}}),
		paid(modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "write", Args: string(edit)}}}),
		paid(tool("write", `{"path":"more.txt","content":"more\n"}`)),
		paid(tool("write", `{"path":"again.txt","content":"again\n"}`)),
		paid(tool("write", `{"path":"third.txt","content":"third\n"}`)),
		paid(tool("plan_check", `{"task":1}`)),
		paid(modeltest.Turn{Text: "done", Default: true}),
	)
	env := moneyEnv(t, srv)
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "tagged")
	if code != exitPaused {
		t.Fatalf("exit %d, want 3 (paused by the task's budget)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// $1 holds five calls of $0.20 (the fifth's worst case, a little
	// above $0.10, fits after $0.80) and not a sixth.
	made := len(srv.Requests())
	if made != 5 {
		t.Errorf("%d model requests, want 5 within the task's $1", made)
	}
	st := stateOf(t, dir)
	if st == nil || st.Spending == nil || math.Abs(st.Spending.TasksUSD["1"]-1) > 1e-9 || st.Spending.TaskBudgets["1"] != 1 || len(st.Spending.Raises) != 0 {
		t.Fatalf("state = %+v, want task 1's $1.00 spent of its $1 and no raise", st)
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, ".weave", "plans", "tagged.md")), "[budget: $1000]") {
		t.Fatal("the model's bash did not rewrite the plan's tag; the resume below would not test its hold")
	}
	code, _, errOut = runWeave(t, bin, dir, env, "start-work")
	if code != exitPaused || len(srv.Requests()) != made {
		t.Errorf("resume: exit %d, %d requests (had %d), want 3 and none: the tag edited during the run does not raise the budget\nstderr: %s", code, len(srv.Requests()), made, errOut)
	}
}

func TestLiveViewShowsTheRunsCost(t *testing.T) {
	now := time.Now()
	m := liveModel{tail: 2, width: 80, now: func() time.Time { return now }}
	m, _ = m.applyEvent(run.Event{Type: run.EventPlanStarted, Plan: "p", Total: 2})
	if strings.Contains(m.View(), "$") {
		t.Errorf("view = %q before any call, want no cost", m.View())
	}
	usd := 0.25
	m, _ = m.applyEvent(run.Event{Type: run.EventModelUsage, Agent: "tapestry", CostUSD: &usd})
	m, _ = m.applyEvent(run.Event{Type: run.EventModelUsage, Agent: "tapestry", CostUSD: &usd})
	if v := m.View(); !strings.Contains(v, "$0.5000") {
		t.Errorf("view = %q, want the run's $0.5000", v)
	}
	m, printed := m.applyEvent(run.Event{Type: run.EventTaskDone, Plan: "p", Task: 1, Title: "One", Completed: 1, Total: 2, CostUSD: &usd})
	if !strings.Contains(printed, "$0.2500") {
		t.Errorf("task done line = %q, want its cost", printed)
	}
	m, _ = m.applyEvent(run.Event{Type: run.EventModelUsage, Agent: "tapestry"})
	if v := m.View(); !strings.Contains(v, "?") || strings.Contains(v, "$0.5000") {
		t.Errorf("view = %q after a call of unknown price, want the cost unknown (?)", v)
	}
}

// TestDefaultPriceOnTheAnthropicWire prices a call of a well-known model
// from the defaults, Anthropic's cache reads and writes counted apart from
// its input: 100,000 in ($0.30), 10,000 out ($0.15), 200,000 read from the
// cache ($0.06), 20,000 written to it ($0.075).
func TestDefaultPriceOnTheAnthropicWire(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := moneyProject(t, nil, "")
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "hello", Usage: &modeltest.Usage{Input: 100000, Output: 10000, CacheRead: 200000, CacheWrite: 20000}})
	env := trustingEnv(t, []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(),
		"WEAVE_MODEL_PROVIDER=anthropic", "WEAVE_MODEL_NAME=claude-sonnet-4-5-20250929", "WEAVE_MODEL_BASE_URL=" + srv.URL,
		"ANTHROPIC_API_KEY=test-key", "WEAVE_MODEL_CONTEXT_WINDOW=1000000",
	})
	code, out, errOut := runWeave(t, bin, dir, env, "chat", "-p", "hi", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var cost *float64
	for _, ev := range moneyEvents(t, out) {
		if ev.Type == "model.usage" {
			cost = ev.CostUSD
		}
	}
	if !near(cost, 0.585) {
		t.Errorf("model.usage cost_usd = %v, want 0.585\n%s", show(cost), out)
	}
}

// TestSpendingSurvivesAKill: what a run spent is in state.json as soon as
// each call is charged, so a run killed in the middle of a task (SIGKILL,
// no save of its own) resumes with it, not with a fresh budget.
func TestSpendingSurvivesAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	dir := moneyProject(t, map[string]string{"two": twoTasks}, fakePrices)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	srv := modeltest.NewServer(t,
		paid(tool("write", `{"path":"one.txt","content":"one\n"}`)),
		modeltest.Turn{Text: "Working on it and never done", Hold: hold},
	)
	cmd := weaveCmd(t, dir, moneyEnv(t, srv), "start-work", "two", "--budget", "1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(time.Minute)
	for len(srv.Requests()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the run made %d model requests in a minute, want 2", len(srv.Requests()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	st := stateOf(t, dir)
	if st == nil || st.Spending == nil || math.Abs(st.Spending.RunUSD-0.2) > 1e-9 || math.Abs(st.Spending.TasksUSD["1"]-0.2) > 1e-9 || st.Spending.RunBudgetUSD != 1 {
		t.Fatalf("state after the kill = %+v, want the $0.20 of the first call and the $1 budget on record", st)
	}
}
