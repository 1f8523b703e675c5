package run

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/host/run/runtest"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// idleAgent ends its turn without finishing for its first idle calls, then
// ticks the task it was given, as a model does with plan_check. It records
// the prompts it got.
type idleAgent struct {
	mu      sync.Mutex
	idle    int
	prompts []string
}

func (a *idleAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.idle", Kind: plugins.KindAgent}, nil
}

func (a *idleAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	a.mu.Lock()
	a.prompts = append(a.prompts, req.Prompt)
	idle := len(a.prompts) <= a.idle
	a.mu.Unlock()
	if idle {
		return plugins.AgentResponse{Output: "I will stop here."}, nil
	}
	return tick(ctx, h, req)
}

// tick ticks the task req names with plan_check, as a model does once the
// work is done.
func tick(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	res, err := h.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolPlanCheck, Args: map[string]any{"plan": req.Plan, "task": req.Task.Number}})
	if err != nil {
		return plugins.AgentResponse{}, err
	}
	if res.IsError || res.Denied {
		return plugins.AgentResponse{Error: "tick: " + res.Output + res.Reason}, nil
	}
	return plugins.AgentResponse{Output: "done", Done: true}, nil
}

func continuationRun(t *testing.T, agent plugins.Agent) (Result, string) {
	t.Helper()
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Only", "", ""), task(2, "Then", "", ""))})
	cfg := config.Default()
	cfg.WorkContinuation.Enabled = true
	pipeline, err := hooks.NewPipeline(hooks.BuiltinHooks(hooks.BuiltinConfig{ProjectDir: project, WorkContinuation: true, MaxNudges: cfg.WorkContinuation.MaxStaleNudges, Timeout: cfg.Hook.Timeout}), hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg, Agent: agent, Hooks: pipeline})
	if err != nil {
		t.Fatal(err)
	}
	return res, project
}

func TestIdleAgentIsNudgedToContinue(t *testing.T) {
	a := &idleAgent{idle: 2}
	res, project := continuationRun(t, a)
	if res.Status != StatusDone {
		t.Fatalf("status = %s (%v), want done after nudges", res.Status, res.Err)
	}
	if len(a.prompts) != 4 {
		t.Fatalf("agent called %d times, want 4 (2 idle turns, then 2 tasks)", len(a.prompts))
	}
	for _, p := range a.prompts[1:3] {
		if !strings.Contains(p, "Continue from the first unchecked task: 1. Only") {
			t.Errorf("nudge prompt = %q, want the continuation prompt naming task 1", p)
		}
	}
	if got := readPlan(t, project, "p"); strings.Contains(got, "[ ]") {
		t.Errorf("plan = %s, want every task ticked", got)
	}
}

func TestIdleAgentWithoutProgressPausesThePlan(t *testing.T) {
	a := &idleAgent{idle: 1 << 30}
	res, project := continuationRun(t, a)
	if res.Status != StatusPaused {
		t.Fatalf("status = %s (%v), want paused", res.Status, res.Err)
	}
	// The first turn, then three nudges without progress; the hook pauses.
	if got := len(a.prompts); got != 4 {
		t.Errorf("agent called %d times, want 4", got)
	}
	st := loadState(t, project)
	if st == nil || !st.Paused || st.PausedReason == "" {
		t.Fatalf("state = %+v, want paused with the hook's reason", st)
	}
}

func TestIdleAgentWithoutContinuationFails(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Only", "", ""))})
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Agent: &idleAgent{idle: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusFailed || !strings.Contains(res.Err.Error(), "stopped without finishing") {
		t.Fatalf("result = %s %v, want failed: stopped without finishing", res.Status, res.Err)
	}
}
