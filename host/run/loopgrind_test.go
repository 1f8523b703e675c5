package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jwz"
	"github.com/weavehq/weave/bus/jwz/jwztest"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/host/run/runtest"
)

const base1, base2 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"

// workersRun is a run with two workers: task 1 lands, task 2 conflicts,
// runs again on the new head and lands.
func workersRun(workers int) []Event {
	w := func(ev Event, worker, attempt int) Event {
		ev.Plan, ev.Total, ev.Worker, ev.Attempt, ev.MaxAttempts = "demo", 2, worker, attempt, 3
		return ev
	}
	started := func(sec, task, worker, attempt int, base string) Event {
		return w(Event{Type: EventTaskStarted, Time: at(sec), Task: task, Title: "T", Completed: attempt - 1, Worktree: filepath.Join(".weave", "worktrees", "demo", "w"+string(rune('0'+worker))),
			Branch: "weave/demo-task-" + string(rune('0'+task)), BaseRef: base}, worker, attempt)
	}
	return []Event{
		{Type: EventPlanStarted, Time: at(0), Plan: "demo", Total: 2, Workers: workers},
		started(1, 1, 1, 1, base1),
		started(1, 2, 2, 1, base1),
		w(Event{Type: EventTaskOutput, Time: at(2), Task: 1, Output: "hi"}, 1, 1),
		w(Event{Type: EventTaskCommitted, Time: at(3), Task: 1, Commit: "c1"}, 1, 1),
		w(Event{Type: EventTaskLanding, Time: at(3), Task: 1, Commit: "c1"}, 1, 1),
		w(Event{Type: EventTaskLanded, Time: at(4), Task: 1, Commit: base2}, 1, 1),
		w(Event{Type: EventTaskDone, Time: at(4), Task: 1, Completed: 1}, 1, 1),
		w(Event{Type: EventTaskConflict, Time: at(5), Task: 2, Completed: 1, Error: "a.txt", Retry: true}, 2, 1),
		started(6, 2, 1, 2, base2),
		w(Event{Type: EventTaskDone, Time: at(7), Task: 2, Completed: 2}, 1, 2),
		{Type: EventPlanDone, Time: at(8), Plan: "demo", Completed: 2, Total: 2},
	}
}

// frame is one stack frame as the source document names its fields.
type frame map[string]any

func TestLoopObserverGrindFrames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
	}{{"said on plan.started", 2}, {"known by its workers' events", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			project := loopProject(t)
			prompt := filepath.Join(project, ".weave", "plans", "demo.md")
			b, _ := bus.NewMemory(bus.DefaultOptions())
			defer b.Close()
			rec := runtest.RecordLoop(t, b)
			feed(LoopObserver(context.Background(), b, project, nil, nil), workersRun(tc.workers))

			// STATE on plan.started, on each task.started (3), task.done (2)
			// and task.conflict (1); then DONE.
			msgs := rec.WaitN(t, 8)
			runID := loop.RunID(loop.ModeGrind, at(0), os.Getpid())
			wt := func(n string) string { return filepath.Join(project, ".weave", "worktrees", "demo", "w"+n) }
			issue := func(task, worker string, iter int, base string, sec int64) frame {
				return frame{"id": "issue-demo-task-" + task + "-" + jsonNum(at(int(sec)).Unix()), "mode": "issue", "iter": float64(iter), "max": float64(3),
					"prompt_file": prompt, "issue_id": "demo-task-" + task, "worktree_path": wt(worker), "branch": "weave/demo-task-" + task, "base_ref": base}
			}
			grind := func(iter int) frame {
				return frame{"id": runID, "mode": "grind", "iter": float64(iter), "max": float64(2), "prompt_file": prompt}
			}
			want := [][]frame{
				{grind(1)},
				{grind(1), issue("1", "1", 1, base1, 1)},
				{grind(1), issue("1", "1", 1, base1, 1), issue("2", "2", 1, base1, 1)},
				{grind(2), issue("2", "2", 1, base1, 1)},
				{grind(2)},
				{grind(2), issue("2", "1", 2, base2, 6)},
				{grind(2)},
			}
			if tc.workers == 0 {
				// Its first STATE came before any worker spoke: a loop's.
				loopID := loop.RunID(loop.ModeLoop, at(0), os.Getpid())
				want[0] = []frame{{"id": loopID, "mode": "loop", "iter": float64(1), "max": float64(2), "prompt_file": prompt}}
			}
			for i, w := range want {
				var e struct {
					Event string  `json:"event"`
					RunID string  `json:"run_id"`
					Stack []frame `json:"stack"`
				}
				if err := json.Unmarshal(msgs[i].Payload, &e); err != nil {
					t.Fatal(err)
				}
				if _, err := loop.Decode(msgs[i].Payload); err != nil {
					t.Errorf("event %d does not validate: %v", i, err)
				}
				for _, f := range e.Stack {
					delete(f, "prompt_blob")
				}
				if e.Event != "STATE" || (e.RunID != runID && i > 0) {
					t.Errorf("event %d = %s %s, want STATE of %s", i, e.Event, e.RunID, runID)
				}
				if diff := cmp.Diff(w, e.Stack); diff != "" {
					t.Errorf("event %d stack (-want +got):\n%s", i, diff)
				}
			}
			if !strings.Contains(string(msgs[7].Payload), `"DONE"`) {
				t.Errorf("last event = %s, want DONE", msgs[7].Payload)
			}
			if as := runtest.Anchors(t, b); len(as) != 1 || as[0].Mode != loop.ModeGrind {
				t.Errorf("anchors = %+v, want one in grind mode", as)
			}
		})
	}
}

func jsonNum(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// The jwz store gets the same frames, and idle's reader takes them.
func TestLoopObserverGrindToJWZ(t *testing.T) {
	project := loopProject(t)
	role := "loop"
	w := jwz.NewWriter(project, &jwz.Sender{ID: "weave", Name: "weave", Role: &role})
	feed(LoopObserver(context.Background(), nil, project, nil, nil, LoopToJWZ(w)), workersRun(2))
	cur := jwztest.ReadStore(t, filepath.Join(project, ".jwz"))[loop.TopicCurrent]
	if len(cur) != 8 {
		t.Fatalf("loop:current in jwz has %d events, want 8", len(cur))
	}
	st, ok := jwztest.IdleParse(cur[2].Body)
	if !ok {
		t.Fatalf("idle cannot parse %s", cur[2].Body)
	}
	if len(st.Stack) != 3 || st.Stack[0].Mode != "grind" || st.Stack[1].Mode != "issue" || st.Stack[2].Mode != "issue" {
		t.Errorf("third STATE in jwz = %s, want a grind frame and two issue frames", cur[2].Body)
	}
	for _, field := range []string{`"worktree_path":"` + filepath.Join(project, ".weave", "worktrees", "demo", "w2") + `"`, `"branch":"weave/demo-task-2"`, `"base_ref":"` + base1 + `"`, `"issue_id":"demo-task-2"`} {
		if !strings.Contains(cur[2].Body, field) {
			t.Errorf("third STATE in jwz = %s, want %s", cur[2].Body, field)
		}
	}
}
