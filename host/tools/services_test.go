package tools

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/plugins"
)

func TestServicesWithoutParts(t *testing.T) {
	empty := &Services{}
	ctx := context.Background()
	res, err := empty.CallTool(ctx, plugins.ToolCall{Tool: "write"})
	if err != nil || !res.Denied || !res.IsError {
		t.Errorf("CallTool without ToolFunc = %+v, %v; want a denied result", res, err)
	}
	if _, err := empty.Complete(ctx, plugins.ChatRequest{}); !errors.Is(err, plugins.ErrNoModel) {
		t.Errorf("Complete without ModelFunc: error = %v, want ErrNoModel", err)
	}
}

// An agent's Progress, TickTask and Complete work in a real call: the tick
// is a plan_check through the gate, so a role without plan_check is refused
// and the file is left alone.
func TestServicesReadAndTickPlans(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	writeFile(t, filepath.Join(e.project, ".weave", "plans", "demo.md"), "# Demo\n\n## TODOs\n\n- [ ] 1. One\n- [ ] 2. Two\n")
	ctx := context.Background()
	tapestry := e.tools.Services(Caller{Agent: "tapestry"}, "s1", Scope{}, nil)
	pr, err := tapestry.Progress(ctx, "demo")
	if err != nil || pr.Plan != "demo" || pr.Total != 2 || pr.Done != 0 || len(pr.Tasks) != 2 {
		t.Fatalf("Progress(demo) = %+v, %v; want 0/2 with its tasks", pr, err)
	}
	thread := e.tools.Services(Caller{Agent: "thread"}, "s1", Scope{}, nil)
	if _, err := thread.TickTask(ctx, "demo", plugins.TaskRef{Number: 1}); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("TickTask as thread = %v, want a denial", err)
	}
	pr, err = tapestry.TickTask(ctx, "demo", plugins.TaskRef{Number: 2})
	if err != nil || pr.Done != 1 || pr.Tasks[0].Done || !pr.Tasks[1].Done {
		t.Fatalf("TickTask(demo, 2) = %+v, %v; want task 2 ticked", pr, err)
	}
	if got := e.file(t, ".weave/plans/demo.md"); !strings.Contains(got, "- [x] 2. Two") || !strings.Contains(got, "- [ ] 1. One") {
		t.Errorf("plan after TickTask:\n%s", got)
	}
	if _, err := tapestry.Complete(ctx, plugins.ChatRequest{}); !errors.Is(err, plugins.ErrNoModel) {
		t.Errorf("Complete = %v, want ErrNoModel from the model service", err)
	}
}
