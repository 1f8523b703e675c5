package agents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/plugintest"
)

const tapestryPlan = "# P\n\n## TODOs\n\n" +
	"- [ ] 1. Think\n  **What**: w\n" +
	"- [ ] 2. Check\n  **What**: w\n  ```sh verify\n  test -f marker\n  ```\n" +
	"\n## Verification\n\n- [ ] Gate\n  ```sh verify\n  true\n  ```\n"

func writePlan(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.md")
	if err := os.WriteFile(path, []byte(tapestryPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tickingHost answers plan_check as the host's door does: the task's
// verify blocks "run" first, each taking the next of the exit codes given
// (0 once they are used up), a failing one refusing the tick, and then the
// task is ticked in the file. Bash answers with the exit codes too.
func tickingHost(t *testing.T, path string, exits ...int) *plugintest.FakeHost {
	h := plugintest.NewFakeHost()
	next := func() int {
		code := 0
		if len(exits) > 0 {
			code, exits = exits[0], exits[1:]
		}
		return code
	}
	h.OnToolFunc(plugins.ToolPlanCheck, func(c plugins.ToolCall) (plugins.ToolResult, error) {
		p, err := plans.Load(path)
		if err != nil {
			return plugins.ToolResult{}, err
		}
		var tk plans.Task
		switch v := c.Args["task"].(type) {
		case float64:
			tk = p.Tasks[int(v)-1]
		case int:
			tk = p.Tasks[v-1]
		case string:
			tk, _, _ = p.FindTitle(v)
		}
		for _, b := range tk.VerifyBlocks() {
			if code := next(); code != 0 {
				return plugins.ToolResult{IsError: true, ExitCode: code, Output: fmt.Sprintf("The tick was refused: the verify block at line %d of the plan failed (exit code %d)", b.Line, code)}, nil
			}
		}
		if _, err := plans.SetDoneIn(p, tk, true); err != nil {
			return plugins.ToolResult{}, err
		}
		return plugins.ToolResult{Output: "ticked"}, nil
	})
	h.OnToolFunc(plugins.ToolBash, func(plugins.ToolCall) (plugins.ToolResult, error) {
		code := next()
		return plugins.ToolResult{ExitCode: code, IsError: code != 0, Output: "checked"}, nil
	})
	return h
}

func taskReq(path string, n int, title string) plugins.AgentRequest {
	return plugins.AgentRequest{SessionID: "s", Prompt: "do it", Plan: path, Task: &plugins.TaskRef{Number: n, Title: title}}
}

func tapestryModel() ModelAgent {
	r, _ := RoleByName(Tapestry)
	return NewModelAgent(r, Overrides{})
}

func TestTapestryWithoutModel(t *testing.T) {
	path := writePlan(t)
	a := NewModelTapestry(tapestryModel())
	h := tickingHost(t, path)
	resp, err := a.Handle(context.Background(), h, taskReq(path, 1, "Think"))
	if err != nil || !errors.Is(ResponseError(resp), ErrNeedsModel) {
		t.Fatalf("prose task without a model = %+v, %v; want ErrNeedsModel", resp, err)
	}
	// A task with only verify blocks runs them when there is no model: a
	// person may have done the work.
	resp, err = a.Handle(context.Background(), h, taskReq(path, 2, "Check"))
	if err != nil || !resp.Done {
		t.Fatalf("verify-only task without a model = %+v, %v; want its verify blocks run and the tick", resp, err)
	}
	// Its verify block failing says that the task needs a model.
	path = writePlan(t)
	resp, err = NewTapestryAgent().Handle(context.Background(), tickingHost(t, path, 1), taskReq(path, 2, "Check"))
	if err != nil || !errors.Is(ResponseError(resp), ErrNeedsModel) || !strings.Contains(resp.Error, "verify block") {
		t.Fatalf("failing verify-only task without a model = %+v, %v; want the block's failure and ErrNeedsModel", resp, err)
	}
}

func TestTapestryVerificationItemWithVerifyBlockNeedsNoModel(t *testing.T) {
	path := writePlan(t)
	h := tickingHost(t, path)
	resp, err := NewModelTapestry(tapestryModel()).Handle(context.Background(), h, taskReq(path, 0, "Gate"))
	if err != nil || !resp.Done {
		t.Fatalf("Handle = %+v, %v; want done", resp, err)
	}
	if n := len(h.ChatRequests()); n != 0 {
		t.Errorf("%d model calls for a Verification item with a verify block, want none", n)
	}
}

func TestTapestryModelEndingWithoutTickIsNotDone(t *testing.T) {
	path := writePlan(t)
	h := tickingHost(t, path)
	h.QueueReply(plugins.ChatResponse{Message: plugins.ChatMessage{Content: "I will do it later."}})
	resp, err := NewModelTapestry(tapestryModel()).Handle(context.Background(), h, taskReq(path, 1, "Think"))
	if err != nil || resp.Done || resp.Error != "" || resp.Output != "I will do it later." {
		t.Fatalf("Handle = %+v, %v; want not done, without error: the session is idle", resp, err)
	}
}
