package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// idleAgent ends its turn without finishing for its first idle calls, then
// works as Tapestry does. It records the prompts it got.
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
	return agents.TapestryAgent{}.Handle(ctx, h, req)
}

func continuationRun(t *testing.T, agent plugins.Agent) (RunResult, string) {
	t.Helper()
	project := newProject(t, map[string]string{"p": plan(task(1, "Only", "true", ""), task(2, "Then", "true", ""))})
	cfg := config.Default()
	cfg.WorkContinuation.Enabled = true
	pipeline, err := hooks.NewPipeline(hooks.BuiltinHooks(BuiltinHookConfig(project, cfg)), hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := StartWork(context.Background(), StartWorkOptions{Project: project, Name: "p", Config: cfg, Agent: agent, Hooks: pipeline})
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
	project := newProject(t, map[string]string{"p": plan(task(1, "Only", "true", ""))})
	res, err := StartWork(context.Background(), StartWorkOptions{Project: project, Name: "p", Agent: &idleAgent{idle: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusFailed || !strings.Contains(res.Err.Error(), "stopped without finishing") {
		t.Fatalf("result = %s %v, want failed: stopped without finishing", res.Status, res.Err)
	}
}

// blockBash is a hook that refuses every bash call.
type blockBash struct{}

func (blockBash) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.block-bash", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore}}, nil
}

func (blockBash) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Tool == plugins.ToolBash {
		return plugins.Decision{Action: plugins.Block, Reason: "no shell today"}, nil
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

func TestDeniedCallIsPublishedOnTheBus(t *testing.T) {
	project := newProject(t, map[string]string{"p": plan(task(1, "Only", "true", ""))})
	b, err := bus.NewMemory(bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := make(chan bus.Message, 4)
	if _, err := b.Subscribe(context.Background(), DeniedTopic, func(_ context.Context, m bus.Message) (bus.Ack, error) {
		got <- m
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{Name: "watcher"}); err != nil {
		t.Fatal(err)
	}
	info, _ := blockBash{}.Info(context.Background())
	pipeline, err := hooks.NewPipeline([]hooks.Registered{{Hook: blockBash{}, Info: info}}, hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := StartWork(context.Background(), StartWorkOptions{Project: project, Name: "p", Hooks: pipeline, Bus: b})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusFailed || !strings.Contains(res.Err.Error(), "no shell today") {
		t.Fatalf("result = %s %v, want failed with the hook's reason", res.Status, res.Err)
	}
	select {
	case m := <-got:
		var p struct {
			Type  string        `json:"type"`
			Event plugins.Event `json:"event"`
		}
		if err := json.Unmarshal(m.Payload, &p); err != nil || p.Type != EventToolDenied || p.Event.Tool != plugins.ToolBash || p.Event.Agent != agents.Tapestry {
			t.Errorf("denial payload = %s (%v), want a tool.denied event for tapestry's bash", m.Payload, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no denial published on " + DeniedTopic)
	}
}
