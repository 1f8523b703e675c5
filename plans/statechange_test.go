package plans

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestStateChanges(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	task := Task{Number: 2, Title: "Build"}
	st := NewState("/p/.weave/plans/a.md", "a", "tapestry", "abc", now)
	st.Pause("interrupted")
	st.Resume("s2")
	if st.Paused || st.PausedReason != "" || len(st.SessionIDs) != 1 {
		t.Fatalf("after Resume: %+v, want unpaused with one session", st)
	}
	st.Begin(task, now)
	if st.InFlight == nil || st.InFlight.Label() != "2 (Build)" || st.Tasks["2"].Attempts != 1 {
		t.Fatalf("after Begin: in flight %+v, record %+v", st.InFlight, st.Tasks["2"])
	}
	st.Withdraw(task)
	st.Begin(task, now)
	st.Failed(task, errors.New("exit 1"))
	if r := st.Tasks["2"]; r.Attempts != 1 || r.LastError != "exit 1" {
		t.Errorf("after Withdraw, Begin, Failed: record %+v, want 1 attempt with its error", r)
	}
	st.Begin(task, now)
	st.Finish(task)
	if r, ok := st.Tasks["2"]; ok || st.InFlight != nil {
		t.Errorf("after Finish: record %+v, in flight %+v; want no record (the checkbox says it), nothing in flight", r, st.InFlight)
	}
	st.Fail("task 3 failed")
	if !st.Paused || st.LastError != "task 3 failed" || st.PausedReason != "task 3 failed" {
		t.Errorf("after Fail: %+v, want paused with the error kept", st)
	}
}

// state.json keeps what resuming needs, not a history: its size does not
// grow with the tasks done, the resumes, or a long error.
func TestStateStaysSmall(t *testing.T) {
	dir := weaveDir(t)
	store := NewStore(dir)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	st := NewState(filepath.Join(dir, "plans", "big.md"), "big", "tapestry", strings.Repeat("a", 40), now)
	for i := 1; i <= 20000; i++ {
		task := Task{Number: i, Title: fmt.Sprintf("Task number %d with a title of some length", i)}
		if i%1000 == 0 {
			st.Resume(fmt.Sprintf("s-20261124-%06d", i))
		}
		st.Begin(task, now)
		if i%3 == 0 {
			st.Failed(task, errors.New(strings.Repeat("a long error line ", 500)))
			st.Begin(task, now)
		}
		st.Finish(task)
	}
	st.Begin(Task{Number: 20001, Title: "last"}, now)
	st.Failed(Task{Number: 20001, Title: "last"}, errors.New(strings.Repeat("é", 5000)))
	st.Fail(strings.Repeat("why ", 5000))
	if err := store.Save(st); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(store.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= 16<<10 {
		b, _ := os.ReadFile(store.Path())
		t.Fatalf("state.json is %d bytes after 20,000 tasks, want under 16 KB:\n%.2000s", fi.Size(), b)
	}
	if len(st.SessionIDs) != maxSessions || st.SessionIDs[maxSessions-1] != "s-20261124-020000" {
		t.Errorf("SessionIDs = %q, want the latest %d", st.SessionIDs, maxSessions)
	}
	if r := st.Tasks["20001"]; r == nil || !utf8.ValidString(r.LastError) || !strings.Contains(r.LastError, "truncated") {
		t.Errorf("the unfinished task's record = %+v, want its error cut on a character boundary, saying so", r)
	}
}

// A state file of an older version, which kept every done task's record,
// loads without them.
func TestLoadDropsDoneRecordsOfOlderFiles(t *testing.T) {
	dir := weaveDir(t)
	old := `{"schema_version":1,"active_plan":"/p/.weave/plans/a.md","session_ids":["s1"],"tasks":{` +
		`"1":{"attempts":1,"updated_at":"2026-01-01T00:00:00Z","done":true},` +
		`"2":{"attempts":2,"last_error":"exit 1","updated_at":"2026-01-01T00:00:00Z","done":false}}}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	st, warning, err := NewStore(dir).Load()
	if err != nil || st == nil {
		t.Fatalf("Load = %v, %q, %v", st, warning, err)
	}
	if _, ok := st.Tasks["1"]; ok || st.Tasks["2"] == nil || st.Tasks["2"].Attempts != 2 {
		t.Errorf("Tasks = %+v, want task 2's record only", st.Tasks)
	}
}

// weaveDir is a project's .weave directory, the directory a Store is given.
func weaveDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".weave")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
