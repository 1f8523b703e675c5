package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/run"
)

// A run with two workers, drawn: one lane per worker with its task, its
// elapsed time and its last line, idle lanes, and the landing queue.
func TestLiveModelLanes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	m := liveModel{tail: 4, width: 100, now: func() time.Time { return now }}
	var printed []string
	step := func(ev run.Event) {
		ev.Plan, ev.Total = "demo", 4
		nm, p := m.applyEvent(ev)
		m = nm
		if p != "" {
			printed = append(printed, p)
		}
	}
	step(run.Event{Type: run.EventPlanStarted, Workers: 3})
	if v := m.View(); !strings.Contains(v, "w1 · idle") || !strings.Contains(v, "w3 · idle") {
		t.Errorf("View() before any task = %q, want three idle lanes", v)
	}
	step(run.Event{Type: run.EventTaskStarted, Worker: 1, Task: 1, Title: "Build", Time: now.Add(-2500 * time.Millisecond), Attempt: 1})
	step(run.Event{Type: run.EventTaskStarted, Worker: 2, Task: 2, Title: "Test", Time: now.Add(-1 * time.Second), Attempt: 2})
	for _, l := range []string{"compiling", "linking"} {
		step(run.Event{Type: run.EventTaskOutput, Worker: 1, Task: 1, Output: l})
	}
	step(run.Event{Type: run.EventTaskOutput, Worker: 2, Task: 2, Output: "\x1b[31mok\x1b[0m 3 tests"})
	v := m.View()
	for _, want := range []string{"demo", "0/4", "w1 ▸ 1. Build  2.5s", "   │ linking", "w2 ▸ 2. Test (attempt 2)  1s", "   │ ok 3 tests", "w3 · idle"} {
		if !strings.Contains(v, want) {
			t.Errorf("View() = %q, want it to contain %q", v, want)
		}
	}
	if strings.Contains(v, "compiling") {
		t.Errorf("View() = %q, want only each lane's last line", v)
	}

	// Task 1 commits: worker 1 is free, task 1 waits to land, then lands.
	step(run.Event{Type: run.EventTaskCommitted, Worker: 1, Task: 1, Title: "Build", Branch: "weave/demo-task-1"})
	step(run.Event{Type: run.EventTaskCommitted, Worker: 2, Task: 2, Title: "Test", Branch: "weave/demo-task-2"})
	step(run.Event{Type: run.EventTaskLanding, Worker: 1, Task: 1, Title: "Build"})
	step(run.Event{Type: run.EventTaskStarted, Worker: 1, Task: 3, Title: "Docs", Time: now})
	v = m.View()
	for _, want := range []string{"w1 ▸ 3. Docs", "w2 · idle", "⇢ landing 1. Build · waiting to land 2. Test"} {
		if !strings.Contains(v, want) {
			t.Errorf("View() = %q, want it to contain %q", v, want)
		}
	}
	// A worker's event carries the progress of when its task started: it
	// does not move the bar; task.done does.
	step(run.Event{Type: run.EventTaskDone, Worker: 1, Task: 1, Title: "Build", Completed: 1, ElapsedMS: 2500})
	step(run.Event{Type: run.EventTaskConflict, Worker: 2, Task: 2, Title: "Test", Error: "a.txt changed on both sides", Retry: true})
	step(run.Event{Type: run.EventTaskOutput, Worker: 1, Task: 3, Output: "writing", Completed: 0})
	v = m.View()
	if !strings.Contains(v, "1/4") || strings.Contains(v, "⇢") {
		t.Errorf("View() = %q, want 1/4 and an empty queue", v)
	}
	want := []string{"✓ 1. Build  2.5s · worker 1", "↺ 2. Test did not land: a.txt changed on both sides (running again on the new head)"}
	if strings.Join(printed, "\n") != strings.Join(want, "\n") {
		t.Errorf("printed above the panel = %q, want %q", printed, want)
	}
	step(run.Event{Type: run.EventPlanPaused, Completed: 1, Reason: "interrupted"})
	if v := m.View(); strings.Contains(v, "▸") {
		t.Errorf("View() after the run paused = %q, want no task running", v)
	}
}

// A run of one task at a time draws no lanes.
func TestLiveModelWithoutWorkersHasNoLanes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	m := liveModel{tail: 2, width: 80, now: func() time.Time { return now }}
	for _, ev := range []run.Event{
		{Type: run.EventPlanStarted, Plan: "demo", Total: 2},
		{Type: run.EventTaskStarted, Plan: "demo", Task: 1, Title: "Build", Total: 2, Time: now.Add(-time.Second)},
		{Type: run.EventTaskOutput, Plan: "demo", Task: 1, Output: "one"},
	} {
		m, _ = m.applyEvent(ev)
	}
	want := "demo  ░░░░░░░░░░░░░░░░░░░░ 0/2\n▸ 1. Build  1s\n  │ one\n"
	if got := m.View(); got != want {
		t.Errorf("View() = %q, want %q", got, want)
	}
}

// --json passes a worker's id and where its task runs through.
func TestJSONViewCarriesWorker(t *testing.T) {
	var out bytes.Buffer
	v := newRunView(&Streams{Out: &out}, true, 0)
	v.Observe(run.Event{Type: run.EventTaskStarted, Plan: "demo", Task: 2, Worker: 2, Worktree: ".weave/worktrees/demo/w2", Branch: "weave/demo-task-2", BaseRef: "abc", Attempt: 1, MaxAttempts: 3})
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"worker": 2.0, "worktree": ".weave/worktrees/demo/w2", "branch": "weave/demo-task-2", "base_ref": "abc", "max_attempts": 3.0} {
		if got[k] != want {
			t.Errorf("--json %s = %v, want %v (%s)", k, got[k], want, out.String())
		}
	}
}

// Plain lines of a run with workers say whose each line is, and when a
// task commits, lands or cannot land; a lone run's lines are as before.
func TestPlainViewNamesWorkers(t *testing.T) {
	var out bytes.Buffer
	v := &plainView{out: &out, errOut: &out}
	for _, ev := range []run.Event{
		{Type: run.EventTaskStarted, Plan: "demo", Task: 1, Title: "Build", Total: 2, Worker: 2},
		{Type: run.EventTaskOutput, Plan: "demo", Task: 1, Output: "hi", Worker: 2},
		{Type: run.EventTaskCommitted, Plan: "demo", Task: 1, Total: 2, Worker: 2, Branch: "weave/demo-task-1"},
		{Type: run.EventTaskLanding, Plan: "demo", Task: 1, Total: 2, Worker: 2},
		{Type: run.EventTaskConflict, Plan: "demo", Task: 1, Total: 2, Worker: 2, Error: "a.txt", Retry: true},
		{Type: run.EventTaskStarted, Plan: "demo", Task: 2, Title: "Lone", Total: 2},
		{Type: run.EventTaskOutput, Plan: "demo", Task: 2, Output: "hey"},
	} {
		v.Observe(ev)
	}
	want := "[0/2] task 1: Build (worker 2)\n    [w2] hi\n[0/2] task 1 committed on weave/demo-task-1 (worker 2); waiting to land\n" +
		"[0/2] task 1 landing\n[0/2] task 1 did not land: a.txt; running it again on the new head\n[0/2] task 2: Lone\n    hey\n"
	if out.String() != want {
		t.Errorf("plain view =\n%s\nwant\n%s", out.String(), want)
	}
}

// A run coordinated over NATS: the lane of a task awarded to a worker on
// the bus shows that worker's name, labels and last heartbeat; the work.*
// events move no progress; a lost worker is said above the panel and the
// lane waits for the next award.
func TestLiveModelRemoteWorkers(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	m := liveModel{tail: 4, width: 120, now: func() time.Time { return now }}
	var printed []string
	step := func(ev run.Event) {
		ev.Plan = "far"
		nm, p := m.applyEvent(ev)
		m = nm
		if p != "" {
			printed = append(printed, p)
		}
	}
	step(run.Event{Type: run.EventPlanStarted, Workers: 2, Completed: 1, Total: 4})
	step(run.Event{Type: run.EventTaskStarted, Worker: 1, Task: 2, Title: "Two", Time: now.Add(-3 * time.Second), Completed: 1, Total: 4})
	step(run.Event{Type: run.EventWorkAwarded, Task: 2, WorkerName: "big", WorkerLabels: []string{"gpu", "os=linux"}, Time: now.Add(-3 * time.Second)})
	step(run.Event{Type: run.EventWorkRenewed, Task: 2, WorkerName: "big", Time: now.Add(-2 * time.Second)})
	// An award of a task no lane runs (a stray event) draws nothing.
	step(run.Event{Type: run.EventWorkAwarded, Task: 9, WorkerName: "ghost", Time: now})
	v := m.View()
	for _, want := range []string{"1/4", "w1 ▸ 2. Two  3s", "on big [gpu,os=linux] · last heartbeat 2s ago", "w2 · idle"} {
		if !strings.Contains(v, want) {
			t.Errorf("View() = %q, want it to contain %q", v, want)
		}
	}
	if strings.Contains(v, "ghost") {
		t.Errorf("View() = %q, want no lane for a task not running", v)
	}
	step(run.Event{Type: run.EventWorkLost, Task: 2, WorkerName: "big", Reason: "silent for more than 15s", Time: now})
	v = m.View()
	if strings.Contains(v, "big") || !strings.Contains(v, "w1 ▸ 2. Two") || !strings.Contains(v, "1/4") {
		t.Errorf("View() after the worker was lost = %q, want task 2 still in lane 1, no worker named", v)
	}
	want := "↺ 2. Two: worker big lost it (silent for more than 15s); offering it again"
	if len(printed) != 1 || printed[0] != want {
		t.Errorf("printed above the panel = %q, want %q", printed, want)
	}
}
