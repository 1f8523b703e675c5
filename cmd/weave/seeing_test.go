package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/jwz/jwztest"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/host/run"
)

// A run with two workers, seen from outside: --json events name the
// worker of every task event, and the loop events (in the project's jwz
// store) are a grind frame with an issue frame per running task, as the
// source document on loop events has them.
func TestWorkersRunSeen(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	m := t.TempDir()
	plan := "# Par\n\n## TODOs\n\n" +
		fmt.Sprintf("- [ ] 1. One\n  ```sh\n  %s; echo one > one.txt\n  ```\n", waitBoth(m, 1, 2)) +
		fmt.Sprintf("- [ ] 2. Two\n  ```sh\n  %s; echo two > two.txt\n  ```\n", waitBoth(m, 2, 1)) +
		"- [ ] 3. Three [after: 1, 2]\n  ```sh\n  cat one.txt two.txt > three.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"par": plan}, map[string]string{"README": "hi\n"})
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "par", "--workers", "2", "--json", "--jwz")
	if code != 0 {
		t.Fatalf("start-work --workers 2 = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	workerOf, maxAttempts := map[int]int{}, 0
	for _, ev := range events(t, out) {
		switch ev.Type {
		case run.EventPlanStarted:
			if ev.Workers != 2 {
				t.Errorf("plan.started workers = %d, want 2", ev.Workers)
			}
		case run.EventTaskStarted:
			workerOf[ev.Task], maxAttempts = ev.Worker, ev.MaxAttempts
		case run.EventTaskOutput, run.EventTaskCommitted, run.EventTaskLanding, run.EventTaskLanded, run.EventTaskDone:
			if ev.Worker == 0 || ev.Worker != workerOf[ev.Task] {
				t.Errorf("%s of task %d from worker %d, want the worker it started on (%d)", ev.Type, ev.Task, ev.Worker, workerOf[ev.Task])
			}
		}
	}
	if len(workerOf) != 3 || workerOf[1] == workerOf[2] || workerOf[1] < 1 || workerOf[2] < 1 || workerOf[1] > 2 || workerOf[2] > 2 {
		t.Errorf("tasks' workers = %v, want tasks 1 and 2 on workers 1 and 2", workerOf)
	}

	cur := jwztest.ReadStore(t, filepath.Join(dir, ".jwz"))[loop.TopicCurrent]
	if len(cur) < 4 {
		t.Fatalf("loop:current has %d events, want a STATE per start and end, then DONE", len(cur))
	}
	both := false
	for i, msg := range cur {
		e, err := loop.Decode([]byte(msg.Body))
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if i == len(cur)-1 {
			if e.Kind != loop.KindDone {
				t.Errorf("last loop event = %s, want DONE", msg.Body)
			}
			break
		}
		if mode, _, _, _ := loop.ParseRunID(e.RunID); e.Kind != loop.KindState || mode != loop.ModeGrind || e.Stack[0].Mode != loop.ModeGrind || e.Stack[0].ID != e.RunID {
			t.Errorf("event %d = %s, want a STATE of a grind", i, msg.Body)
		}
		var raw struct{ Stack []map[string]any }
		if err := json.Unmarshal([]byte(msg.Body), &raw); err != nil {
			t.Fatal(err)
		}
		for _, f := range raw.Stack[1:] {
			task := strings.TrimPrefix(f["issue_id"].(string), "par-task-")
			want := map[string]any{"mode": "issue", "branch": "weave/par-task-" + task, "iter": 1.0, "max": float64(maxAttempts)}
			for k, v := range want {
				if f[k] != v {
					t.Errorf("event %d issue frame %s = %v, want %v: %s", i, k, f[k], v, msg.Body)
				}
			}
			wt, _ := f["worktree_path"].(string)
			if !strings.HasPrefix(wt, filepath.Join(dir, ".weave", "worktrees", "par", "w")) {
				t.Errorf("event %d issue frame worktree_path = %q, want a worker's worktree of %s", i, wt, dir)
			}
			if b, _ := f["base_ref"].(string); len(b) != 40 {
				t.Errorf("event %d issue frame base_ref = %q, want the integration commit it started from", i, b)
			}
		}
		if len(raw.Stack) == 3 {
			both = true
		}
	}
	if !both {
		t.Errorf("no STATE had both tasks running:\n%v", cur)
	}

	// Undo what the run landed: task 3 waits for task 2, so off a terminal
	// its revert needs --force; then two.txt leaves weave/par, and task 2
	// its tick.
	if r := runBin(t, nil, "", "--dir", dir, "task", "undo", "par", "2", "--revert"); r.code != exitUsage || !strings.Contains(r.err, "--force") {
		t.Errorf("task undo par 2 --revert off a terminal = %d %q, want 2 asking for --force", r.code, r.err)
	}
	r := runBin(t, nil, "", "--dir", dir, "task", "undo", "par", "2", "--revert", "--force")
	if r.code != 0 || !strings.Contains(r.out, "reverted task 2") {
		t.Fatalf("task undo par 2 --revert --force = %d %q %q", r.code, r.out, r.err)
	}
	if files := gitIn(t, dir, "ls-tree", "--name-only", "weave/par"); strings.Contains(files, "two.txt") || !strings.Contains(files, "one.txt") {
		t.Errorf("weave/par after reverting task 2 holds %q", files)
	}
	if p := planOf(t, dir, "par"); !strings.Contains(p, "- [ ] 2. Two") || strings.Count(p, "- [x]") != 2 {
		t.Errorf("plan after reverting task 2:\n%s", p)
	}
}

// On a terminal, a --workers 2 run draws a lane per worker while both
// tasks run, and the line of each finished task names its worker.
func TestWorkersLiveViewDrawsLanes(t *testing.T) {
	m := t.TempDir()
	gate := filepath.Join(m, "go")
	block := func(n int) string {
		// Each task waits for the test to have seen both lanes; the bound
		// is a failure guard, not a timing.
		return fmt.Sprintf("echo working on %d; i=0; until [ -e %s ]; do i=$((i+1)); [ $i -lt 1200 ] || exit 9; sleep 0.05; done", n, gate)
	}
	plan := "# Par\n\n## TODOs\n\n" +
		fmt.Sprintf("- [ ] 1. One\n  ```sh\n  %s\n  ```\n", block(1)) +
		fmt.Sprintf("- [ ] 2. Two\n  ```sh\n  %s\n  ```\n", block(2)) +
		"- [ ] 3. Three [after: 1, 2]\n  ```sh\n  true\n  ```\n"
	dir := workersRepo(t, map[string]string{"par": plan}, map[string]string{"README": "hi\n"})
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	trustInProcess(t)
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- runArgs(context.Background(), &Streams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard, Terminal: true, Width: 100},
			[]string{"--dir", dir, "start-work", "par", "--workers", "2"})
	}()
	// The renderer redraws only the lines that changed: each piece of the
	// lanes is looked for on its own.
	lanes := func(s string) bool {
		for _, want := range []string{"w1 ▸ ", "w2 ▸ ", "│ working on 1", "│ working on 2", "1. One  ", "2. Two  "} {
			if !strings.Contains(s, want) {
				return false
			}
		}
		return true
	}
	deadline := time.After(time.Minute)
	for !lanes(out.String()) {
		select {
		case <-deadline:
			os.WriteFile(gate, nil, 0o644)
			t.Fatalf("no frame with both lanes in a minute:\n%s", out.String())
		case code := <-done:
			t.Fatalf("start-work ended (%d) before both lanes were drawn:\n%s", code, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("start-work --workers 2 = %d:\n%s", code, out.String())
	}
	got := ansiSeq.ReplaceAllString(out.String(), "")
	if !strings.HasSuffix(got, "\rpar  "+bar(3, 3)+" 3/3  done\n") {
		t.Errorf("the last frame is not the plan's line alone:\n%q", got[max(len(got)-200, 0):])
	}
	for _, want := range []string{"1. One", "2. Two", "3. Three"} {
		if !regexp.MustCompile(`✓ ` + regexp.QuoteMeta(want) + `  \S+ · worker [12]`).MatchString(got) {
			t.Errorf("live view lacks the finished line of %q with its worker:\n%s", want, got)
		}
	}
}
