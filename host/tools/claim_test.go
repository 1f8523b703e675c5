package tools

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// TestClaimNeverTicks is plan_check in a worker (Handed.Claim): the verify
// blocks of the task handed run, a passing one records a claim, and no
// checkbox changes, neither of another task nor of the one handed.
func TestClaimNeverTicks(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	path := filepath.Join(e.project, ".weave", "plans", "door.md")
	writeFile(t, path, doorPlan)
	p, err := plans.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	claims := 0
	call := func(h *Handed, args map[string]any) plugins.ToolResult {
		t.Helper()
		ctx := WithScope(context.Background(), Scope{Handed: h})
		res, err := e.tools.Call(ctx, asTapestry, "s1", plugins.ToolCall{Tool: plugins.ToolPlanCheck, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	h := &Handed{Plan: "door", Task: p.Tasks[0], Claim: func() { claims++ }}
	expect(t, "plan_check", call(h, map[string]any{"plan": "door", "task": 3}), true, "refused: you were handed task 1 (Write it) of door")
	expect(t, "plan_check", call(h, map[string]any{"plan": "other", "task": 1}), true, "refused: you were handed task 1")
	expect(t, "plan_check", call(h, map[string]any{"plan": "door", "task": 1}), true, "The tick was refused", "test -f it.txt")
	if claims != 0 {
		t.Fatalf("%d claims after a failing verify block", claims)
	}
	writeFile(t, filepath.Join(e.project, "it.txt"), "")
	expect(t, "plan_check", call(h, map[string]any{"plan": "door", "task": "Write it"}), false, "passed its verify blocks here")
	// A model never claims a runbook task; the runbook executor does.
	expect(t, "plan_check", call(&Handed{Plan: "door", Task: p.Tasks[1], Claim: func() { claims++ }}, map[string]any{"task": 2}), true, "is a runbook task")
	expect(t, "plan_check", call(&Handed{Plan: "door", Task: p.Tasks[1], Runbook: true, Claim: func() { claims++ }}, map[string]any{"task": 2}), false, "passed")
	if claims != 2 {
		t.Errorf("%d claims, want 2", claims)
	}
	if got := e.file(t, ".weave/plans/door.md"); got != doorPlan {
		t.Errorf("plan = %q, want no checkbox changed by a claim", got)
	}
}
