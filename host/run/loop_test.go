package run

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/run/runtest"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/internal/proc"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// pausedRun is a run of a two-task plan interrupted during task 2.
var pausedRun = []Event{
	{Type: EventPlanStarted, Time: at(0), Plan: "demo", Completed: 0, Total: 2},
	{Type: EventTaskStarted, Time: at(1), Plan: "demo", Task: 1, Title: "One", Completed: 0, Total: 2},
	{Type: EventTaskOutput, Time: at(2), Plan: "demo", Task: 1, Output: "hi"},
	{Type: EventTaskDone, Time: at(3), Plan: "demo", Task: 1, Title: "One", Completed: 1, Total: 2},
	{Type: EventTaskStarted, Time: at(4), Plan: "demo", Task: 2, Title: "Two", Completed: 1, Total: 2},
	{Type: EventPlanPaused, Time: at(5), Plan: "demo", Completed: 1, Total: 2, Reason: "interrupted"},
}

// resumedRun finishes it.
var resumedRun = []Event{
	{Type: EventPlanStarted, Time: at(100), Plan: "demo", Completed: 1, Total: 2, Resumed: true},
	{Type: EventTaskStarted, Time: at(101), Plan: "demo", Task: 2, Title: "Two", Completed: 1, Total: 2},
	{Type: EventTaskDone, Time: at(102), Plan: "demo", Task: 2, Title: "Two", Completed: 2, Total: 2},
	{Type: EventPlanDone, Time: at(103), Plan: "demo", Completed: 2, Total: 2},
}

// failedRun has task 1 fail for good.
var failedRun = []Event{
	{Type: EventPlanStarted, Time: at(200), Plan: "demo", Completed: 0, Total: 2},
	{Type: EventTaskStarted, Time: at(201), Plan: "demo", Task: 1, Title: "One", Completed: 0, Total: 2},
	{Type: EventTaskFailed, Time: at(202), Plan: "demo", Task: 1, Title: "One", Completed: 0, Total: 2, Error: "exit 7"},
	{Type: EventPlanPaused, Time: at(203), Plan: "demo", Task: 1, Title: "One", Completed: 0, Total: 2, Reason: "task 1 failed: exit 7"},
}

func loopProject(t *testing.T) string {
	t.Helper()
	return runtest.NewProject(t, map[string]string{"demo": "# Demo\n"})
}

// loopSummary is what a test checks of one loop:current event.
type loopSummary struct {
	Kind   loop.Kind
	Reason string
	RunID  string
	Iter   int
	Max    int
	Prompt string
}

func summarize(t *testing.T, msgs []bus.Message) []loopSummary {
	t.Helper()
	var out []loopSummary
	for _, m := range msgs {
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(m.Payload, &typ)
		if typ.Type != LoopEventType {
			t.Errorf("loop event payload type = %q, want %q", typ.Type, LoopEventType)
		}
		e, err := loop.Decode(m.Payload)
		if err != nil {
			t.Fatalf("loop.Decode(%s) = %v", m.Payload, err)
		}
		s := loopSummary{Kind: e.Kind, Reason: e.Reason, RunID: e.RunID}
		if f, ok := e.Top(); ok {
			s.Iter, s.Max, s.Prompt = f.Iter, f.Max, f.PromptFile
		}
		out = append(out, s)
	}
	return out
}

func feed(obs Observer, evs []Event) {
	for _, ev := range evs {
		obs(ev)
	}
}

func TestLoopObserverSequences(t *testing.T) {
	project := loopProject(t)
	prompt := filepath.Join(project, ".weave", "plans", "demo.md")
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	rec := runtest.RecordLoop(t, b)
	ctx := context.Background()

	var seen []string
	next := func(ev Event) { seen = append(seen, ev.Type) }
	feed(LoopObserver(ctx, b, project, nil, next), pausedRun)
	feed(LoopObserver(ctx, b, project, nil, nil), resumedRun)
	feed(LoopObserver(ctx, b, project, nil, nil), failedRun)

	if len(seen) != len(pausedRun) {
		t.Errorf("next observer saw %v, want every event of the run", seen)
	}
	run1 := loop.RunID(loop.ModeLoop, at(0), os.Getpid())
	run2 := loop.RunID(loop.ModeLoop, at(100), os.Getpid())
	run3 := loop.RunID(loop.ModeLoop, at(200), os.Getpid())
	want := []loopSummary{
		{loop.KindState, "", run1, 1, 2, prompt},
		{loop.KindState, "", run1, 1, 2, prompt},
		{loop.KindState, "", run1, 2, 2, prompt},
		{loop.KindState, "", run1, 2, 2, prompt},
		{Kind: loop.KindAbort, Reason: loop.ReasonUserCancelled},
		{loop.KindState, "", run2, 2, 2, prompt},
		{loop.KindState, "", run2, 2, 2, prompt},
		{loop.KindState, "", run2, 2, 2, prompt},
		{Kind: loop.KindDone, Reason: loop.ReasonComplete},
		{loop.KindState, "", run3, 1, 2, prompt},
		{loop.KindState, "", run3, 1, 2, prompt},
		{Kind: loop.KindAbort},
	}
	got := summarize(t, rec.WaitN(t, len(want)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loop:current events (-want +got):\n%s", diff)
	}

	wantAnchors := []loop.Anchor{
		{Goal: "Plan demo, task 2: Two", Mode: loop.ModeLoop, Iteration: "1/2", NextStep: "Run `weave start-work demo` to resume at task 2", Timestamp: at(5)},
		{Goal: "Plan demo, task 2: Two", Mode: loop.ModeLoop, Iteration: "2/2", NextStep: "Plan demo is complete; nothing left to run", Timestamp: at(103)},
		{Goal: "Plan demo, task 1: One", Mode: loop.ModeLoop, Iteration: "0/2", NextStep: "Run `weave start-work demo` to resume at task 1", Timestamp: at(203)},
	}
	if diff := cmp.Diff(wantAnchors, runtest.Anchors(t, b)); diff != "" {
		t.Errorf("loop:anchor (-want +got):\n%s", diff)
	}

	// weave status reads the last one back.
	e, stale, err := LoopState(ctx, b, at(300))
	if err != nil || e == nil || e.Kind != loop.KindAbort || stale {
		t.Errorf("LoopState() = %+v, %v, %v; want the ABORT, not stale", e, stale, err)
	}
}

func TestLoopObserverGitAnchor(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	project := loopProject(t)
	git := func(args ...string) {
		t.Helper()
		out, err := proc.GitOutput(context.Background(), project, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(project, "main.go"), []byte("package main\n"), 0o644)
	git("add", ".")
	git("commit", "-q", "-m", "first commit")
	os.WriteFile(filepath.Join(project, "main.go"), []byte("package main // changed\n"), 0o644)

	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	feed(LoopObserver(context.Background(), b, project, nil, nil), pausedRun)
	as := runtest.Anchors(t, b)
	if len(as) != 1 {
		t.Fatalf("anchors = %+v, want one", as)
	}
	if !strings.HasSuffix(as[0].Progress, " first commit") || len(as[0].Progress) < len("1234567 first commit") {
		t.Errorf("anchor progress = %q, want the short sha and subject of the commit", as[0].Progress)
	}
	if as[0].ModifiedFiles != "main.go" {
		t.Errorf("anchor modified_files = %q, want main.go", as[0].ModifiedFiles)
	}
}

func TestLoopObserverSkipsInvalid(t *testing.T) {
	// A plan with no tasks cannot make a valid STATE (max must be at least
	// 1): nothing is published, and the run is not disturbed.
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	obs := LoopObserver(context.Background(), b, loopProject(t), nil, nil)
	obs(Event{Type: EventPlanStarted, Time: at(0), Plan: "demo", Total: 0})
	if _, ok, _ := b.Retained(context.Background(), loop.TopicCurrent); ok {
		t.Errorf("a STATE with max 0 was published; want it refused by validation")
	}
}

func TestLoopObserverPublishErrorsAreNotFatal(t *testing.T) {
	b, _ := bus.NewMemory(bus.DefaultOptions())
	b.Close()
	var n int
	obs := LoopObserver(context.Background(), b, loopProject(t), nil, func(Event) { n++ })
	feed(obs, resumedRun) // must neither panic nor stop
	if n != len(resumedRun) {
		t.Errorf("next observer saw %d events on a closed bus, want %d", n, len(resumedRun))
	}
}

func TestLoopStateStale(t *testing.T) {
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	ctx := context.Background()
	if e, _, err := LoopState(ctx, b, t0); e != nil || err != nil {
		t.Errorf("LoopState(empty bus) = %+v, %v; want nil, nil", e, err)
	}
	feed(LoopObserver(ctx, b, loopProject(t), nil, nil), pausedRun[:2])
	tests := []struct {
		now  time.Time
		want bool
	}{
		{at(60), false},
		{t0.Add(loop.StateTTL - time.Second), false},
		{t0.Add(loop.StateTTL + 2*time.Second), true},
	}
	for _, tc := range tests {
		e, stale, err := LoopState(ctx, b, tc.now)
		if err != nil || e == nil || e.Kind != loop.KindState {
			t.Fatalf("LoopState() = %+v, %v; want the STATE", e, err)
		}
		if stale != tc.want {
			t.Errorf("LoopState(now %s) stale = %v, want %v", tc.now.Sub(t0), stale, tc.want)
		}
	}
}

func TestWithType(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"type":"x","a":1}`},
		{`{}`, `{"type":"x"}`},
		{` { "a" : 1 } `, `{"type":"x", "a" : 1 }`},
	}
	for _, tc := range tests {
		if got := string(withType([]byte(tc.in), "x")); got != tc.want {
			t.Errorf("withType(%s) = %s, want %s", tc.in, got, tc.want)
		}
		var v map[string]any
		if err := json.Unmarshal(withType([]byte(tc.in), "x"), &v); err != nil {
			t.Errorf("withType(%s) is not JSON: %v", tc.in, err)
		}
	}
}
