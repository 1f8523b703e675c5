package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

const doorPlan = "# Door\n\n## TODOs\n\n" +
	"- [ ] 1. Write it\n  ```sh verify\n  test -f it.txt\n  ```\n" +
	"- [ ] 2. Deploy\n  ```sh\n  echo deployed > deployed.txt\n  ```\n" +
	"- [ ] 3. Other\n"

func TestTickDoor(t *testing.T) {
	setup := func(t *testing.T) (*toolsEnv, string) {
		t.Helper()
		e := newToolsEnv(t, nil, nil)
		path := filepath.Join(e.project, ".weave", "plans", "door.md")
		writeFile(t, path, doorPlan)
		return e, path
	}
	handedCall := func(t *testing.T, e *toolsEnv, h *Handed, args map[string]any) plugins.ToolResult {
		t.Helper()
		ctx := WithScope(context.Background(), Scope{Handed: h})
		res, err := e.tools.Call(ctx, asTapestry, "s1", plugins.ToolCall{Tool: plugins.ToolPlanCheck, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	t.Run("a failing verify block refuses the tick", func(t *testing.T) {
		e, _ := setup(t)
		expect(t, "plan_check", e.call(t, asTapestry, "plan_check", map[string]any{"plan": "door", "task": 1}), true,
			"The tick was refused", "test -f it.txt", "exit code 1")
		if got := e.file(t, ".weave/plans/door.md"); got != doorPlan {
			t.Errorf("plan = %q, want it unchanged", got)
		}
		writeFile(t, filepath.Join(e.project, "it.txt"), "")
		expect(t, "plan_check", e.call(t, asTapestry, "plan_check", map[string]any{"plan": "door", "task": 1}), false, "ticked task 1")
	})
	t.Run("a model never ticks a runbook task", func(t *testing.T) {
		e, _ := setup(t)
		expect(t, "plan_check", e.call(t, asTapestry, "plan_check", map[string]any{"plan": "door", "task": 2}), true,
			"refused: task 2 (Deploy) of door is a runbook task")
		if _, err := os.Stat(filepath.Join(e.project, "deployed.txt")); err == nil {
			t.Error("the runbook task's block ran")
		}
	})
	t.Run("only the handed task", func(t *testing.T) {
		e, path := setup(t)
		p, err := plans.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		h := &Handed{Plan: "door", Task: p.Tasks[0]}
		expect(t, "plan_check", handedCall(t, e, h, map[string]any{"plan": "door", "task": 3}), true,
			"refused: you were handed task 1 (Write it) of door; plan_check ticks only that task, not task 3 (Other) of door")
		// The runbook executor ticks its own task without running it again.
		rb := &Handed{Plan: "door", Task: p.Tasks[1], Runbook: true}
		expect(t, "plan_check", handedCall(t, e, rb, map[string]any{"plan": "door", "task": 2}), false, "ticked task 2")
		expect(t, "plan_check", handedCall(t, e, rb, map[string]any{"plan": "door", "task": 3}), true, "refused: you were handed task 2")
	})
	t.Run("a run owns the marks", func(t *testing.T) {
		e, path := setup(t)
		p, err := plans.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		release := e.tools.OwnTicks(p)
		defer release()
		res := e.call(t, asTapestry, "bash", map[string]any{"command": `sed -i 's/- \[ \] 3\./- [x] 3./' .weave/plans/door.md && echo ran`})
		expect(t, "bash", res, false, "ran\n\nrefused: the checkbox of task 3 (Other) of door was ticked without plan_check and is put back")
		if got := e.file(t, ".weave/plans/door.md"); got != doorPlan {
			t.Errorf("plan after a bash tick = %q, want it put back", got)
		}
		if _, notices, _ := e.tools.KeepTicks(p); len(notices) != 1 {
			t.Errorf("notices after the bash tick = %q, want one", notices)
		}
		// An editor between two tool calls: the run sees it put back
		// before it reads progress, and says so once.
		if err := os.WriteFile(path, []byte(strings.Replace(doorPlan, "- [ ] 3.", "- [x] 3.", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		np, notices, err := e.tools.KeepTicks(p)
		if err != nil || np.Progress().Completed != 0 || len(notices) != 1 {
			t.Errorf("KeepTicks = %v done, notices %q, %v; want none done and one notice", np.Progress(), notices, err)
		}
		// The door's own tick stands.
		writeFile(t, filepath.Join(e.project, "it.txt"), "")
		expect(t, "plan_check", e.call(t, asTapestry, "plan_check", map[string]any{"plan": "door", "task": 1}), false, "ticked task 1")
		if np, _, _ := e.tools.KeepTicks(p); !np.Tasks[0].Done {
			t.Error("the door's tick was put back")
		}
		release()
		// Between runs a person's edit stands.
		writeFile(t, path, strings.Replace(doorPlan, "- [ ] 3.", "- [x] 3.", 1))
		e.call(t, asTapestry, "read", map[string]any{"path": ".weave/plans/door.md"})
		if got := e.file(t, ".weave/plans/door.md"); !strings.Contains(got, "- [x] 3.") {
			t.Errorf("a person's tick between runs was put back: %q", got)
		}
	})
}

func TestTickDoorVerifiesAsStarted(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	path := filepath.Join(e.project, ".weave", "plans", "door.md")
	writeFile(t, path, doorPlan)
	p, err := plans.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	release := e.tools.OwnTicks(p)
	// A verify block weakened in place, its task renamed as well: the
	// block the run started with is the one run, and the model is told.
	writeFile(t, path, strings.Replace(strings.Replace(doorPlan, "test -f it.txt", "true", 1), "1. Write it", "1. Write it now", 1))
	expect(t, "plan_check", e.call(t, asTapestry, "plan_check", map[string]any{"plan": "door", "task": 1}), true,
		"note: the verify block of task 1 (Write it now) of door was changed during the run; the run checks the block it started with")
	if got := e.file(t, ".weave/plans/door.md"); strings.Contains(got, "[x]") {
		t.Errorf("plan after plan_check with the weakened block = %q, want task 1 open: it.txt does not exist", got)
	}
	release()
	// Between runs the block is the person's: the next run takes it.
	p, err = plans.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer e.tools.OwnTicks(p)()
	res := e.call(t, asTapestry, "plan_check", map[string]any{"plan": "door", "task": 1})
	expect(t, "plan_check", res, false, "ticked task 1 (Write it now)")
	if strings.Contains(res.Output, "was changed during the run") {
		t.Errorf("plan_check after a new run = %q, want no note: the block was changed between runs", res.Output)
	}
}

// TickAll ticks several tasks of a plan the run owns in one pass of the
// door: the ticks are the run's own, so KeepTicks keeps them, and a task
// already ticked is left as it is.
func TestTickAllIsTheDoorsTick(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	path := filepath.Join(e.project, ".weave", "plans", "door.md")
	writeFile(t, path, strings.Replace(doorPlan, "- [ ] 2.", "- [X] 2.", 1))
	p, err := plans.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer e.tools.OwnTicks(p)()
	np, err := e.tools.TickAll(p, []plans.Task{p.Tasks[0], p.Tasks[1], p.Tasks[2]})
	if err != nil {
		t.Fatal(err)
	}
	if pr := np.Progress(); pr.Completed != 3 {
		t.Errorf("%d done after TickAll, want 3", pr.Completed)
	}
	kept, notices, err := e.tools.KeepTicks(np)
	if err != nil || len(notices) != 0 || kept.Progress().Completed != 3 {
		t.Errorf("KeepTicks after TickAll = %d done, %v, %v; want the ticks kept", kept.Progress().Completed, notices, err)
	}
	want := strings.NewReplacer("- [ ] 1.", "- [x] 1.", "- [ ] 2.", "- [X] 2.", "- [ ] 3.", "- [x] 3.").Replace(doorPlan)
	if got := e.file(t, ".weave/plans/door.md"); got != want {
		t.Errorf("plan = %q, want %q", got, want)
	}
}
