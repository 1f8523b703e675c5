package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/run/runtest"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/internal/proctest"
	"github.com/weavehq/weave/plugins"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/plans"
)

func readPlan(t *testing.T, project, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(project, ".weave", "plans", name+".md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// task renders a runbook task with a work block and a verify block.
func task(n int, title, work, verify string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- [ ] %d. %s\n", n, title)
	if work != "" {
		fmt.Fprintf(&b, "  ```sh\n  %s\n  ```\n", work)
	}
	if verify != "" {
		fmt.Fprintf(&b, "  ```sh verify\n  %s\n  ```\n", verify)
	}
	return b.String()
}

func plan(tasks ...string) string {
	return "# Test plan\n\n## TODOs\n\n" + strings.Join(tasks, "\n")
}

// recorder collects a run's events.
type recorder struct {
	mu     sync.Mutex
	events []Event
	hook   func(Event)
}

func (r *recorder) observe(ev Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(ev)
	}
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Type != EventTaskOutput && e.Type != EventWarning {
			out = append(out, e.Type)
		}
	}
	return out
}

func (r *recorder) output() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Type == EventTaskOutput {
			out = append(out, e.Output)
		}
	}
	return out
}

func (r *recorder) warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Type == EventWarning {
			out = append(out, e.Reason)
		}
	}
	return out
}

func start(t *testing.T, ctx context.Context, project, name string, rec *recorder) Result {
	t.Helper()
	res, err := StartWork(ctx, Options{Project: project, Name: name, Observe: rec.observe})
	if err != nil {
		t.Fatalf("StartWork(%q) error = %v", name, err)
	}
	return res
}

func loadState(t *testing.T, project string) *plans.State {
	t.Helper()
	st, _, err := plans.NewStore(filepath.Join(project, ".weave")).Load()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStartWorkRunsAndTicksEveryTask(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"build": plan(
		task(1, "Make a file", "echo one > a.txt", "grep -q one a.txt"),
		task(2, "Append", "echo two >> a.txt", "test $(wc -l < a.txt) -eq 2"),
	)})
	rec := &recorder{}
	res := start(t, context.Background(), project, "build", rec)
	if res.Status != StatusDone {
		t.Fatalf("status = %s (%v), want done", res.Status, res.Err)
	}
	got := readPlan(t, project, "build")
	if strings.Contains(got, "- [ ]") || strings.Count(got, "- [x]") != 2 {
		t.Errorf("plan after run:\n%s\nwant both tasks ticked", got)
	}
	want := []string{EventPlanStarted, EventTaskStarted, EventTaskDone, EventTaskStarted, EventTaskDone, EventPlanDone}
	if got := rec.types(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events = %v, want %v", got, want)
	}
	if st := loadState(t, project); st != nil {
		t.Errorf("state after a finished plan = %+v, want none", st)
	}
	b, err := os.ReadFile(filepath.Join(project, "a.txt"))
	if err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("a.txt = %q, %v; want the effect of both tasks once", b, err)
	}
	logs, _ := filepath.Glob(filepath.Join(project, ".weave", "logs", "build", "*.log"))
	if len(logs) != 2 {
		t.Errorf("task logs = %v, want one per task", logs)
	}
}

func TestStartWorkOutputReachesObserverAndLog(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Talk", "echo hello; echo oops >&2; printf tail", ""))})
	rec := &recorder{}
	if res := start(t, context.Background(), project, "p", rec); res.Status != StatusDone {
		t.Fatalf("status = %s (%v)", res.Status, res.Err)
	}
	out := strings.Join(rec.output(), "\n")
	for _, want := range []string{"hello", "oops", "tail"} {
		if !strings.Contains(out, want) {
			t.Errorf("output events %q lack %q", out, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(project, ".weave", "logs", "p", "001-talk.log"))
	if err != nil || !strings.Contains(string(b), "hello") || !strings.Contains(string(b), "oops") {
		t.Errorf("log = %q, %v; want the task's output", b, err)
	}
}

// The log opens beside the state write of each attempt: every attempt of a
// retried task still finds its header and its output in the task's log, in
// order, and the log a task.started event names is that file.
func TestStartWorkEachAttemptInTheTaskLog(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(
		task(1, "First", "echo one", ""),
		task(2, "Flaky", "echo try >> tries.txt; echo attempt-$(wc -l < tries.txt)", "false"),
	)})
	rec := &recorder{}
	if res := start(t, context.Background(), project, "p", rec); res.Status != StatusFailed {
		t.Fatalf("status = %s (%v), want failed", res.Status, res.Err)
	}
	logs := map[string]bool{}
	rec.mu.Lock()
	for _, ev := range rec.events {
		if ev.Type == EventTaskStarted {
			logs[ev.Log] = true
		}
	}
	rec.mu.Unlock()
	want := map[string]bool{filepath.Join(".weave", "logs", "p", "001-first.log"): true, filepath.Join(".weave", "logs", "p", "002-flaky.log"): true}
	if !maps.Equal(logs, want) {
		t.Errorf("task.started logs = %v, want %v", logs, want)
	}
	b, err := os.ReadFile(filepath.Join(project, ".weave", "logs", "p", "002-flaky.log"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	i1, i2 := strings.Index(got, "attempt 1:"), strings.Index(got, "attempt 2:")
	o1, o2 := strings.Index(got, "attempt-1"), strings.Index(got, "attempt-2")
	if i1 < 0 || i2 < 0 || o1 < 0 || o2 < 0 || !(i1 < o1 && o1 < i2 && i2 < o2) {
		t.Errorf("log of the retried task:\n%s\nwant each attempt's header, then its output", got)
	}
	if b, err := os.ReadFile(filepath.Join(project, ".weave", "logs", "p", "001-first.log")); err != nil || !strings.Contains(string(b), "one") {
		t.Errorf("log of task 1 = %q, %v; want its output", b, err)
	}
}

// A task's log rotates at runbook.max_log_bytes, keeping one older file.
func TestStartWorkTaskLogRotatesAtConfiguredSize(t *testing.T) {
	// 300 lines of 1 KiB: past a 64 KiB limit several times over.
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Flood", `i=0; while [ $i -lt 300 ]; do printf '%01024d\n' 0; i=$((i+1)); done`, ""))})
	cfg := config.Default()
	cfg.Runbook.MaxLogBytes = 64 << 10
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %s, %v (%v)", res.Status, err, res.Err)
	}
	log := filepath.Join(project, ".weave", "logs", "p", "001-flood.log")
	for _, f := range []string{log, log + ".1"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Errorf("%s: %v; want the log rotated at 64 KiB", filepath.Base(f), err)
			continue
		}
		if fi.Size() > 64<<10 {
			t.Errorf("%s is %d bytes, want at most runbook.max_log_bytes (65536)", filepath.Base(f), fi.Size())
		}
	}
	if _, err := os.Stat(log + ".2"); err == nil {
		t.Errorf("%s.2 exists; a task log keeps one older file", filepath.Base(log))
	}
}

func TestStartWorkFailingTaskRetriesOnceThenPauses(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(
		task(1, "Good", "true", ""),
		task(2, "Bad", "echo run >> runs.txt", "false"),
		task(3, "Never", "touch never.txt", ""),
	)})
	rec := &recorder{}
	res := start(t, context.Background(), project, "p", rec)
	if res.Status != StatusFailed {
		t.Fatalf("status = %s, want failed", res.Status)
	}
	b, _ := os.ReadFile(filepath.Join(project, "runs.txt"))
	if got := strings.Count(string(b), "run"); got != 2 {
		t.Errorf("failing task ran %d times, want 2 (one retry)", got)
	}
	if _, err := os.Stat(filepath.Join(project, "never.txt")); err == nil {
		t.Error("the task after a failed one ran")
	}
	st := loadState(t, project)
	if st == nil || !st.Paused || !strings.Contains(st.PausedReason, "verify block") || st.LastError == "" {
		t.Fatalf("state = %+v, want paused with the verify error", st)
	}
	if rec := st.Tasks["2"]; rec == nil || rec.Attempts != 2 || rec.LastError == "" {
		t.Errorf("task record = %+v, want 2 attempts with the error", rec)
	}
	if got := readPlan(t, project, "p"); !strings.Contains(got, "- [x] 1.") || !strings.Contains(got, "- [ ] 2.") {
		t.Errorf("plan = %s; want task 1 ticked, task 2 not", got)
	}
	want := []string{EventPlanStarted, EventTaskStarted, EventTaskDone, EventTaskStarted, EventTaskFailed, EventTaskStarted, EventTaskFailed, EventPlanPaused}
	if got := rec.types(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events = %v, want %v", got, want)
	}

	// Fixing the cause and running again resumes at the failed task.
	runtest.WritePlan(t, project, "p", strings.Replace(readPlan(t, project, "p"), "  false\n", "  true\n", 1))
	rec2 := &recorder{}
	res = start(t, context.Background(), project, "", rec2)
	if res.Status != StatusDone {
		t.Fatalf("resumed status = %s (%v), want done", res.Status, res.Err)
	}
	if res.Resolution.Verdict != plans.VerdictResume {
		t.Errorf("verdict = %s, want resume", res.Resolution.Verdict)
	}
}

func TestStartWorkTaskWithoutBlocksNeedsModel(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan("- [ ] 1. Think hard\n  **What**: something only a model can do\n")})
	res := start(t, context.Background(), project, "p", &recorder{})
	if res.Status != StatusFailed || !errors.Is(res.Err, agents.ErrNeedsModel) {
		t.Fatalf("result = %s %v, want failed with ErrNeedsModel", res.Status, res.Err)
	}
	if !strings.Contains(res.Err.Error(), "1 (Think hard)") {
		t.Errorf("error %q does not name the task", res.Err)
	}
	if st := loadState(t, project); st == nil || st.Tasks["1"].Attempts != 1 {
		t.Errorf("state = %+v, want one attempt and no retry", st)
	}
}

func TestStartWorkInterruptPausesAndStopsProcessGroup(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(
		task(1, "Hang", "sleep 300 & echo $! > child.pid; echo started; wait", ""),
		task(2, "Next", "true", ""),
	)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{hook: func(ev Event) {
		if ev.Type == EventTaskOutput && ev.Output == "started" {
			cancel()
		}
	}}
	res := start(t, ctx, project, "p", rec)
	if res.Status != StatusPaused {
		t.Fatalf("status = %s (%v), want paused", res.Status, res.Err)
	}
	st := loadState(t, project)
	if st == nil || !st.Paused || st.InFlight != nil {
		t.Fatalf("state = %+v, want paused with nothing in flight", st)
	}
	if st.Tasks["1"].Attempts != 0 {
		t.Errorf("attempts = %d, want 0: an interrupt is not a failure", st.Tasks["1"].Attempts)
	}
	b, err := os.ReadFile(filepath.Join(project, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	proctest.WaitGone(t, pid)
	if strings.Contains(readPlan(t, project, "p"), "[x]") {
		t.Error("an interrupted task was ticked")
	}

	// The next run resumes at the interrupted task.
	rec2 := &recorder{}
	runtest.WritePlan(t, project, "p", strings.Replace(readPlan(t, project, "p"), "sleep 300 & echo $! > child.pid; echo started; wait", "true", 1))
	if res := start(t, context.Background(), project, "", rec2); res.Status != StatusDone {
		t.Fatalf("resume = %s (%v), want done", res.Status, res.Err)
	}
}

func TestStartWorkHonoursPlanEditedWhileRunning(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{})
	body := plan(task(1, "First", "true", ""), task(2, "Second", "touch second.txt", ""))
	runtest.WritePlan(t, project, "p", body)
	edited := false
	rec := &recorder{}
	rec.hook = func(ev Event) {
		// While task 1 runs the user inserts a task 3 and rewords the intro;
		// task 2 still runs and the new task runs too.
		if ev.Type == EventTaskStarted && ev.Task == 1 && !edited {
			edited = true
			cur := readPlan(t, project, "p")
			cur = strings.Replace(cur, "# Test plan", "# Test plan (edited)\n\nNotes added while running.", 1)
			cur += "\n" + task(3, "Added later", "touch third.txt", "")
			runtest.WritePlan(t, project, "p", cur)
		}
	}
	res := start(t, context.Background(), project, "p", rec)
	if res.Status != StatusDone {
		t.Fatalf("status = %s (%v)", res.Status, res.Err)
	}
	got := readPlan(t, project, "p")
	if !strings.Contains(got, "Notes added while running.") || strings.Count(got, "- [x]") != 3 {
		t.Errorf("plan = %s; want the edit kept and 3 tasks ticked", got)
	}
	for _, f := range []string{"second.txt", "third.txt"} {
		if _, err := os.Stat(filepath.Join(project, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestStartWorkTaskRemovedWhileRunning(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{})
	runtest.WritePlan(t, project, "p", plan(task(1, "Doomed", "true", ""), task(2, "Kept", "true", "")))
	rec := &recorder{}
	rec.hook = func(ev Event) {
		if ev.Type == EventTaskStarted && ev.Task == 1 {
			runtest.WritePlan(t, project, "p", plan(task(2, "Kept", "true", "")))
		}
	}
	res := start(t, context.Background(), project, "p", rec)
	if res.Status != StatusDone {
		t.Fatalf("status = %s (%v)", res.Status, res.Err)
	}
	// A run's tasks do not leave its plan while it runs: task 1 is put
	// back, and done only once its blocks ran and the door ticked it.
	if got := readPlan(t, project, "p"); !strings.Contains(got, "- [x] 1. Doomed\n  ```sh\n  true\n  ```\n- [x] 2. Kept") {
		t.Errorf("plan = %q; want task 1 put back before task 2 and both ticked", got)
	}
	if w := strings.Join(rec.warnings(), "\n"); !strings.Contains(w, "task 1 (Doomed) of p was removed from the plan during the run; the run put it back") {
		t.Errorf("warnings = %q; want one about the removed task", w)
	}
}

func TestStartWorkCorruptStateIsMovedAside(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Do", "true", ""))})
	if err := os.WriteFile(filepath.Join(project, ".weave", "state.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	res := start(t, context.Background(), project, "", rec)
	if res.Status != StatusDone {
		t.Fatalf("status = %s (%v)", res.Status, res.Err)
	}
	if len(rec.warnings()) == 0 {
		t.Error("no warning about the corrupt state.json")
	}
	aside, _ := filepath.Glob(filepath.Join(project, ".weave", "state.json.corrupt-*"))
	if len(aside) != 1 {
		t.Errorf("moved-aside files = %v, want one", aside)
	}
}

func TestStartWorkSecondProcessIsLockedOut(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Do", "true", ""))})
	release, err := plans.NewStore(filepath.Join(project, ".weave")).Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, err = StartWork(context.Background(), Options{Project: project, Name: "p"})
	var locked *plans.LockedError
	if !errors.As(err, &locked) || locked.PID != os.Getpid() {
		t.Fatalf("StartWork while locked = %v, want a LockedError naming pid %d", err, os.Getpid())
	}
}

func TestStartWorkResolutions(t *testing.T) {
	done := strings.Replace(plan(task(1, "Done", "true", "")), "[ ]", "[x]", 1)
	tests := []struct {
		name   string
		plans  map[string]string
		arg    string
		want   Status
		detail string
	}{
		{"complete plan by name", map[string]string{"finished": done}, "finished", StatusComplete, "already complete"},
		{"unknown name lists incomplete", map[string]string{"alpha": plan(task(1, "A", "true", "")), "finished": done}, "zeta", StatusNotFound, "alpha"},
		{"several incomplete asks to choose", map[string]string{"a": plan(task(1, "A", "true", "")), "b": plan(task(1, "B", "true", ""))}, "", StatusChoose, "name one"},
		{"no plans", map[string]string{}, "", StatusNone, "no plans"},
		{"invalid plan", map[string]string{"empty": "# Nothing to do\n"}, "empty", StatusInvalid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			project := runtest.NewProject(t, tc.plans)
			res := start(t, context.Background(), project, tc.arg, &recorder{})
			if res.Status != tc.want {
				t.Fatalf("status = %s, want %s", res.Status, tc.want)
			}
			if msg := res.Resolution.Message(); !strings.Contains(msg, tc.detail) {
				t.Errorf("message %q lacks %q", msg, tc.detail)
			}
		})
	}
}

func TestStartWorkRejectsNameOutsidePlans(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Do", "true", ""))})
	if err := os.WriteFile(filepath.Join(project, ".weave", "secret.md"), []byte(plan(task(1, "X", "touch pwned", ""))), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "../secret"})
	if err == nil && res.Status != StatusNotFound {
		t.Fatalf("StartWork(../secret) = %s, want an error", res.Status)
	}
	if _, err := os.Stat(filepath.Join(project, "pwned")); err == nil {
		t.Fatal("a plan outside .weave/plans ran")
	}
}

func TestStartWorkClearsStateOfFinishedPlan(t *testing.T) {
	done := strings.Replace(plan(task(1, "Done", "true", "")), "[ ]", "[x]", 1)
	project := runtest.NewProject(t, map[string]string{"p": done})
	store := plans.NewStore(filepath.Join(project, ".weave"))
	// As left by a run killed between its last tick and its cleanup.
	if err := store.Save(&plans.State{SchemaVersion: 1, ActivePlan: filepath.Join(project, ".weave", "plans", "p.md"), PlanName: "p"}); err != nil {
		t.Fatal(err)
	}
	if res := start(t, context.Background(), project, "p", &recorder{}); res.Status != StatusComplete {
		t.Fatalf("status = %s, want complete", res.Status)
	}
	if st := loadState(t, project); st != nil {
		t.Errorf("state = %+v, want it cleared", st)
	}
}

func TestIsRunEvent(t *testing.T) {
	for ev, want := range map[string]bool{"tool.execute.before": true, "plan.task.done": true, "plan.todos.done": true, "chat.message": false, "session.compacting": false} {
		if got := IsRunEvent(ev); got != want {
			t.Errorf("IsRunEvent(%q) = %v, want %v", ev, got, want)
		}
	}
}

// The start is resolved once, by the run; the built-in start-work hook
// takes that resolution and leaves a plan it cannot start to the run, while
// another hook's refusal stops the start.
func TestStartWorkResolvesOnce(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"demo": plan(task(1, "Only", "true", ""))})
	builtins, err := hooks.NewPipeline(hooks.BuiltinHooks(hooks.BuiltinConfig{ProjectDir: project}), hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "nope", Hooks: builtins})
	if err != nil || res.Status != StatusNotFound {
		t.Fatalf("StartWork(nope) = %s, %v; want not-found from the run", res.Status, err)
	}
	info, _ := refuseStart{}.Info(context.Background())
	regs := append(hooks.BuiltinHooks(hooks.BuiltinConfig{ProjectDir: project}), hooks.Registered{Hook: refuseStart{}, Info: info})
	refusing, err := hooks.NewPipeline(regs, hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err = StartWork(context.Background(), Options{Project: project, Name: "demo", Hooks: refusing})
	if err != nil || res.Status != StatusBlocked || !strings.Contains(res.Err.Error(), "not today") {
		t.Fatalf("StartWork(demo) with a refusing hook = %s, %v, %v; want blocked", res.Status, res.Err, err)
	}
}

// refuseStart refuses every start.
type refuseStart struct{}

func (refuseStart) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.refuse-start", Kind: plugins.KindHook, Events: []string{plugins.EventCommandExecuteBefore}}, nil
}

func (refuseStart) Handle(context.Context, plugins.Event) (plugins.Decision, error) {
	return plugins.Decision{Action: plugins.Block, Reason: "not today"}, nil
}
