package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/run/runtest"
)

// When tasks wait to land, the next one's landing starts as soon as the
// one before is on the branch, before that one's box is ticked: the git
// work of one overlaps the plan's and state.json's writes of the other.
// Task 1's verify on the landed tree holds its landing until tasks 2 and
// 3, which start only once it lands, are both in the queue.
func TestNextLandingOverlapsTheTick(t *testing.T) {
	m := t.TempDir()
	first, open := filepath.Join(m, "first-landing"), filepath.Join(m, "queued")
	wait := waitFile
	var b strings.Builder
	b.WriteString("# Test plan\n\n## TODOs\n\n")
	// The worker's own run of the verify (its claim) does not wait: only
	// the landing's, in the land worktree.
	fmt.Fprintf(&b, "- [ ] 1. One\n  **Files**: `one.txt`\n  ```sh\n  echo 1 > one.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in */land) %s;; esac; test -f one.txt\n  ```\n", wait(open))
	for n := 2; n <= 3; n++ {
		fmt.Fprintf(&b, "- [ ] %d. T%d\n  **Files**: `t%d.txt`\n  ```sh\n  %s; echo %d > t%d.txt\n  ```\n", n, n, n, wait(first), n, n)
	}
	project := runtest.NewProject(t, map[string]string{"p": b.String()})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
		{"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		gitRun(t, project, args...)
	}
	touch := func(f string) {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	var committed atomic.Int32
	rec := &recorder{hook: func(ev Event) {
		switch {
		case ev.Type == EventTaskLanding && ev.Task == 1:
			touch(first)
		case ev.Type == EventTaskCommitted && ev.Task != 1 && committed.Add(1) == 2:
			// Both are in the queue once the coordinator goes on from
			// this event.
			touch(open)
		}
	}}
	cfg := config.Default()
	cfg.Run.Workers, cfg.Run.InferDeps = 3, true
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg, Observe: rec.observe})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %v, %v (%v); events %v", res.Status, err, res.Err, rec.types())
	}
	rec.mu.Lock()
	events := slices.Clone(rec.events)
	rec.mu.Unlock()
	done1, nextLanding := -1, -1
	for i, ev := range events {
		switch {
		case ev.Type == EventTaskDone && ev.Task == 1:
			done1 = i
		case ev.Type == EventTaskLanding && ev.Task != 1 && nextLanding < 0:
			nextLanding = i
		}
	}
	if done1 < 0 || nextLanding < 0 || nextLanding > done1 {
		t.Fatalf("task 1 ticked at event %d, the next landing started at event %d: want the landing first; events %v", done1, nextLanding, rec.types())
	}
	if got := gitRun(t, project, "rev-list", "--count", "main..weave/p"); got != "3" {
		t.Fatalf("%s commits on weave/p, want 3", got)
	}
}

// waitFile is a shell loop that waits for file f to exist, as a task's
// block waits for a step of the test, and fails the block after two
// minutes instead of holding the test until its deadline.
func waitFile(f string) string {
	return "n=0; while [ ! -e " + f + " ]; do n=$((n+1)); if [ $n -gt 6000 ]; then echo gave up waiting for " + f + " >&2; exit 1; fi; sleep 0.02; done"
}
