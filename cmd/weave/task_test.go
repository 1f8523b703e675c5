package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/plans"
)

func TestTaskDoneAndUndoByAPerson(t *testing.T) {
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Build\n  ```sh\n  true\n  ```\n- [ ] 2. Sign the release\n  ```sh\n  exit 7\n  ```\n"
	dir := project(t, map[string]string{"p": plan})
	path := filepath.Join(dir, ".weave", "plans", "p.md")
	if r := runBin(t, nil, "", "--dir", dir, "start-work", "p"); r.code != exitFailed {
		t.Fatalf("start-work = %d, want 1 at task 2", r.code)
	}
	r := runBin(t, nil, "", "--dir", dir, "task", "done", "p", "2")
	if r.code != 0 || !strings.Contains(r.out, "ticked task 2") || !strings.Contains(r.out, "done by a person") {
		t.Fatalf("task done = %d %q %q", r.code, r.out, r.err)
	}
	b, _ := os.ReadFile(path)
	if want := strings.Replace(strings.Replace(plan, "- [ ] 1.", "- [x] 1.", 1), "- [ ] 2.", "- [x] 2.", 1); string(b) != want {
		t.Errorf("plan after task done =\n%s\nwant only task 2's checkbox changed:\n%s", b, want)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ".weave", "state.json"))
	var st plans.State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rec := range st.Tasks {
		if rec.Done && rec.By == plans.ByPerson {
			found = true
		}
	}
	if !found {
		t.Errorf("state.json does not record a task done by a person: %s", raw)
	}
	// The person's tick finished the plan: it is complete, not paused on
	// the error of the failed run.
	r = runBin(t, nil, "", "--dir", dir, "status", "--json")
	var status struct {
		Plans []struct {
			Name, State  string
			LastError    string `json:"last_error"`
			PausedReason string `json:"paused_reason"`
		}
	}
	if err := json.Unmarshal([]byte(r.out), &status); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.out)
	}
	for _, p := range status.Plans {
		if p.Name == "p" && (p.State != "complete" || p.LastError != "" || p.PausedReason != "") {
			t.Errorf("status of p after the last task was ticked by hand = %+v, want complete with no error", p)
		}
	}
	if r := runBin(t, nil, "", "--dir", dir, "task", "done", "p", "2"); r.code != 0 || !strings.Contains(r.out, "already ticked") {
		t.Errorf("task done twice = %d %q, want 0 and already ticked", r.code, r.out)
	}
	if r := runBin(t, nil, "", "--dir", dir, "start-work", "p"); r.code != 0 {
		t.Errorf("start-work after a person did the failing task = %d %q, want 0", r.code, r.err)
	}

	if r := runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "Sign"); r.code != 0 || !strings.Contains(r.out, "unticked task 2") {
		t.Errorf("task undo = %d %q %q", r.code, r.out, r.err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "- [ ] 2. Sign") {
		t.Errorf("task undo left %s", b)
	}
	if r := runBin(t, nil, "", "--dir", dir, "task", "done", "p", "9"); r.code != exitFailed || !strings.Contains(r.err, "no task 9") {
		t.Errorf("task done p 9 = %d %q, want 1 saying there is no task 9", r.code, r.err)
	}
}

func TestCompletionOfNames(t *testing.T) {
	dir := project(t, map[string]string{"oauth-login": okPlan, "dark-mode": okPlan})
	r := runBin(t, nil, "", "--dir", dir, "__complete", "plan", "show", "")
	if !strings.Contains(r.out, "oauth-login") || !strings.Contains(r.out, "dark-mode") {
		t.Errorf("completion of plan show = %q, want both plan names", r.out)
	}
	r = runBin(t, nil, "", "--dir", dir, "__complete", "start-work", "da")
	if !strings.Contains(r.out, "dark-mode") || strings.Contains(r.out, "oauth-login") {
		t.Errorf("completion of start-work da = %q, want dark-mode only", r.out)
	}
	r = runBin(t, nil, "", "--dir", dir, "__complete", "task", "done", "dark-mode", "")
	if !strings.Contains(r.out, "1\tSay hi") || !strings.Contains(r.out, "2\tCheck") {
		t.Errorf("completion of task done = %q, want the unchecked task numbers", r.out)
	}
	r = runBin(t, nil, "", "--dir", dir, "__complete", "hooks", "test", "")
	if !strings.Contains(r.out, "verification-reminder") {
		t.Errorf("completion of hooks test = %q, want the hook names", r.out)
	}
	r = runBin(t, nil, "", "--dir", dir, "__complete", "--color", "")
	if !strings.Contains(r.out, "never") {
		t.Errorf("completion of --color = %q, want the modes", r.out)
	}
}

func TestStartWorkSkipLeavesATaskForAPerson(t *testing.T) {
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Build\n  ```sh\n  true\n  ```\n- [ ] 2. Sign by hand\n  ```sh\n  exit 7\n  ```\n- [ ] 3. Ship\n  ```sh\n  true\n  ```\n"
	dir := project(t, map[string]string{"p": plan})
	r := runBin(t, nil, "", "--dir", dir, "start-work", "--skip", "2", "p")
	if r.code != exitPaused || !strings.Contains(r.out+r.err, "weave task done p N") {
		t.Fatalf("start-work --skip 2 = %d\n%s\n%s\nwant 3 (paused) naming weave task done", r.code, r.out, r.err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ".weave", "plans", "p.md"))
	if !strings.Contains(string(b), "- [x] 1.") || !strings.Contains(string(b), "- [ ] 2.") || !strings.Contains(string(b), "- [x] 3.") {
		t.Errorf("after --skip 2 the plan is\n%s\nwant 1 and 3 ticked, 2 not", b)
	}
	if r := runBin(t, nil, "", "--dir", dir, "task", "done", "p", "2"); r.code != 0 {
		t.Fatalf("task done = %d %q", r.code, r.err)
	}
	if r := runBin(t, nil, "", "--dir", dir, "start-work", "p"); r.code != 0 {
		t.Errorf("start-work after the person's task = %d %q, want 0", r.code, r.err)
	}
}
