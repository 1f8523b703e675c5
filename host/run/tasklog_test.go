package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/run/runtest"
)

// A run opens its tasks' logs through the project's directory held open
// (loneLog). Blocks that attack the logs directory between tasks get
// nothing written outside the project: the plan's logs directory moved
// out (the next log is made inside again), a link planted where the next
// log goes, and the directory replaced by a link out of the project.
func TestStartWorkTaskLogsStayInsideWhenBlocksMoveThem(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	moved, linked := filepath.Join(outside, "moved"), filepath.Join(outside, "linked")
	if err := os.Mkdir(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(".weave", "logs", "p")
	project := runtest.NewProject(t, map[string]string{"p": plan(
		task(1, "One", "mv "+logs+" "+moved, ""),
		task(2, "Two", "echo two", ""),
		task(3, "Three", "ln -s "+victim+" "+filepath.Join(logs, "004-four.log"), ""),
		task(4, "Four", "rm "+filepath.Join(logs, "004-four.log")+" && mv "+logs+" "+logs+".old && ln -s "+linked+" "+logs, ""),
		task(5, "Five", "echo five", ""),
	)})
	cfg := config.Default()
	cfg.Sandbox.Mode = "off" // the blocks write where a sandbox would not let them
	rec := &recorder{}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg, Observe: rec.observe})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %s (%v), %v; want done", res.Status, res.Err, err)
	}
	if b, err := os.ReadFile(filepath.Join(project, logs+".old", "002-two.log")); err != nil || !strings.Contains(string(b), "two") {
		t.Errorf("task 2's log = %q, %v; want it made inside the project again, with its output", b, err)
	}
	if entries, _ := os.ReadDir(moved); len(entries) != 1 || entries[0].Name() != "001-one.log" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the logs directory moved out of the project holds %v, want only task 1's log, which was open as it moved", names)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the file a planted link pointed at = %q, want it untouched", b)
	}
	if entries, _ := os.ReadDir(linked); len(entries) != 0 {
		t.Errorf("the directory the logs were linked to holds %d files, want none", len(entries))
	}
	warned := 0
	rec.mu.Lock()
	for _, ev := range rec.events {
		if ev.Type == EventWarning && strings.Contains(ev.Reason, "cannot write the log") {
			warned++
		}
	}
	rec.mu.Unlock()
	if warned != 2 {
		t.Errorf("%d warnings of a log not written, want 2 (tasks 4 and 5)", warned)
	}
}
