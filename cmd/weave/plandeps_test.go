package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

// cyclePlan's tasks wait for each other in a cycle, and task 3 for a task
// the plan does not have; each would leave a file behind if it ran.
const cyclePlan = "# Cycle\n\n## TODOs\n\n" +
	"- [ ] 1. Write a\n  **Depends**: 2\n  ```sh\n  touch ran-1\n  ```\n" +
	"- [ ] 2. Write b [after: 1]\n  ```sh\n  touch ran-2\n  ```\n" +
	"- [ ] 3. Write c\n  **Depends**: task 9\n  ```sh\n  touch ran-3\n  ```\n" +
	"- [ ] 4. Write d\n  **Depends**: 4\n  ```sh\n  touch ran-4\n  ```\n"

// TestPlanValidateNamesDependencyErrors: plan validate names the cycle, the
// unknown number and the task waiting for itself, with their lines, and
// start-work refuses the plan without running any of its tasks.
func TestPlanValidateNamesDependencyErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"cycle": cyclePlan})

	code, out, errOut := runWeave(t, bin, dir, nil, "plan", "validate", "cycle")
	for _, want := range []string{
		"cycle.md:5: error: tasks 1 → 2 → 1 form a cycle",
		"cycle.md:14: error: task 3 depends on task 9, which is not in the plan",
		"cycle.md:19: error: task 4 depends on itself",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan validate printed %q, want %q", out, want)
		}
	}
	if code != exitFailed || !strings.Contains(errOut, "3 error(s)") {
		t.Errorf("plan validate = exit %d, stderr %q; want 1 and 3 errors", code, errOut)
	}

	code, out, _ = runWeave(t, bin, dir, nil, "plan", "validate", "cycle", "--json")
	var v struct {
		Valid  bool
		Errors []struct {
			Line    int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("plan validate --json printed %q: %v", out, err)
	}
	if code != exitFailed || v.Valid || len(v.Errors) != 3 || v.Errors[2].Line != 5 {
		t.Errorf("plan validate --json = exit %d, %+v; want 1 and three errors, the cycle's on line 5", code, v)
	}

	code, out, errOut = runWeave(t, bin, dir, nil, "start-work", "cycle")
	if code != exitFailed || !strings.Contains(out+errOut, "form a cycle") {
		t.Errorf("start-work = exit %d\nstdout: %s\nstderr: %s\nwant 1, naming the cycle", code, out, errOut)
	}
	for _, f := range []string{"ran-1", "ran-2", "ran-3", "ran-4"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("start-work ran a task of a plan with dependency errors (%s exists)", f)
		}
	}
}

// TestPatternCannotLeaveADependencyCycle: Pattern's model writes a plan
// whose tasks wait for each other; weave sends the cycle back, and only the
// plan without it is accepted.
func TestPatternCannotLeaveADependencyCycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	second := "\n- [ ] 2. Test the handler\n  **What**: a test for it.\n  **Files**: `healthz_test.go` (new)\n  **Depends**: %s\n  **Acceptance**: the test passes.\n"
	plan := func(firstDeps, secondDeps string) string {
		p := strings.Replace(healthzPlan, "%s", "Small", 1)
		p = strings.Replace(p, "%s", strings.Replace(second, "%s", secondDeps, 1)+healthzVerification, 1)
		return strings.Replace(p, "  **Acceptance**: the handler answers 200.", "  **Depends**: "+firstDeps+"\n  **Acceptance**: the handler answers 200.", 1)
	}
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, ".weave/plans/healthz.md", plan("2", "1"))}},
		modeltest.Turn{Text: "Wrote .weave/plans/healthz.md."},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, ".weave/plans/healthz.md", plan("none", "1"))}},
		modeltest.Turn{Text: "Fixed .weave/plans/healthz.md."},
	)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "plan", "new", "add a /healthz endpoint")
	if code != 0 || !strings.Contains(out, "3 tasks") {
		t.Fatalf("plan new = exit %d\nstdout: %s\nstderr: %s\nwant the fixed plan accepted", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	third := decodeBody(t, reqs[2])
	if last := third.Messages[len(third.Messages)-1]; last.Role != "user" || !strings.Contains(last.Content, "tasks 1 → 2 → 1 form a cycle") {
		t.Errorf("message after the cyclic plan = %+v, want the cycle named", last)
	}
	if code, out, errOut := runWeave(t, bin, dir, nil, "plan", "validate", "healthz"); code != 0 || !strings.Contains(out, "is valid (0 warning(s))") {
		t.Errorf("plan validate: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
