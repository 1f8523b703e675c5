package host

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/host/run/runtest"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

const busRunPlan = "# Demo\n\n## TODOs\n\n- [ ] 1. Say hi\n  ```sh\n  echo hi\n  ```\n- [ ] 2. Say bye\n  ```sh\n  echo bye\n  ```\n"

// A real start-work run publishes its loop events, and a bus peer acting
// as a hook sees (and may block) its tool calls.
func TestStartWorkOnTheBus(t *testing.T) {
	tests := []struct {
		name       string
		block      bool
		wantStatus run.Status
		wantLast   loop.Kind
		// wantStates is the number of STATEs before the last event.
		wantStates int
	}{
		{"completes", false, run.StatusDone, loop.KindDone, 5},
		{"blocked by a peer", true, run.StatusFailed, loop.KindAbort, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			project := runtest.NewProject(t, map[string]string{"demo": busRunPlan})
			b, _ := bus.NewMemory(bus.DefaultOptions())
			defer b.Close()
			ctx := context.Background()
			var mu sync.Mutex
			var commands []string
			_, err := b.Subscribe(ctx, busface.HookTopic(plugins.EventToolExecuteBefore), func(ctx context.Context, m bus.Message) (bus.Ack, error) {
				var ev plugins.Event
				_ = json.Unmarshal(m.Payload, &ev)
				if ev.Tool != plugins.ToolBash {
					return bus.Ack{Processed: true}, nil // the plan_check ticks
				}
				cmd, _ := ev.Args["command"].(string)
				mu.Lock()
				commands = append(commands, cmd)
				mu.Unlock()
				if tc.block && strings.Contains(cmd, "bye") {
					return bus.Ack{Processed: true, StopPropagation: true, Result: json.RawMessage(`{"action":"block","reason":"no goodbyes"}`)}, nil
				}
				return bus.Ack{Processed: true}, nil
			}, bus.SubscribeOptions{Name: "guard"})
			if err != nil {
				t.Fatal(err)
			}
			rec := runtest.RecordLoop(t, b)
			regs, err := busface.Hooks(ctx, b, config.Default())
			if err != nil {
				t.Fatal(err)
			}
			pipeline, err := hooks.NewPipeline(regs, hooks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := config.Default()
			cfg.Runbook.Retries = 0
			res, err := run.StartWork(ctx, run.Options{Project: project, Name: "demo", Config: cfg, Hooks: pipeline,
				Observe: run.LoopObserver(ctx, b, project, nil, nil)})
			if err != nil {
				t.Fatalf("StartWork = %v", err)
			}
			if res.Status != tc.wantStatus {
				t.Fatalf("StartWork status = %s (%v), want %s", res.Status, res.Err, tc.wantStatus)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(commands) != 2 || !strings.Contains(commands[0], "hi") || !strings.Contains(commands[1], "bye") {
				t.Errorf("the bus hook saw commands %q, want the two tasks' commands", commands)
			}
			cur, ok, err := loop.Current(ctx, b)
			if err != nil || !ok || cur.Kind != tc.wantLast {
				t.Errorf("loop:current = %+v, %v, %v; want %s", cur, ok, err, tc.wantLast)
			}
			// Every event published was valid: the STATEs as the run moved,
			// then how it ended.
			msgs := rec.WaitN(t, tc.wantStates+1)
			for i, m := range msgs {
				e, err := loop.Decode(m.Payload)
				if err != nil {
					t.Fatalf("invalid loop event %s: %v", m.Payload, err)
				}
				want := loop.KindState
				if i == tc.wantStates {
					want = tc.wantLast
				}
				if e.Kind != want {
					t.Errorf("loop event %d = %s, want %s", i, e.Kind, want)
				}
			}
			if as := runtest.Anchors(t, b); len(as) != 1 {
				t.Errorf("anchors = %+v, want one at the end of the run", as)
			}
		})
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
	project := runtest.NewProject(t, map[string]string{"p": "# P\n\n## TODOs\n\n- [ ] 1. Only\n  ```sh\n  true\n  ```\n"})
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
	cfg := config.Default()
	gate, err := tools.NewGate(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{project: project, cfg: cfg, logger: slog.New(slog.DiscardHandler), gate: gate, bus: b, pipeline: pipeline}
	if h.tools, err = h.newTools(nil); err != nil {
		t.Fatal(err)
	}
	res, err := run.StartWork(context.Background(), run.Options{Project: project, Name: "p", Hooks: pipeline, Tools: h.tools})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != run.StatusFailed || !strings.Contains(res.Err.Error(), "no shell today") {
		t.Fatalf("result = %s %v, want failed with the hook's reason", res.Status, res.Err)
	}
	select {
	case m := <-got:
		var p struct {
			Type  string        `json:"type"`
			Event plugins.Event `json:"event"`
		}
		if err := json.Unmarshal(m.Payload, &p); err != nil || p.Type != tools.EventToolDenied || p.Event.Tool != plugins.ToolBash || p.Event.Agent != agents.Tapestry {
			t.Errorf("denial payload = %s (%v), want a tool.denied event for tapestry's bash", m.Payload, err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no denial published on " + DeniedTopic)
	}
}

// Open builds what it is asked for and nothing more; nothing starts until
// it is used, and Close may be called twice.
func TestOpenAndClose(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(busface.URLEnv, "")
	project := runtest.NewProject(t, nil)
	ctx := context.Background()

	bare, err := Open(ctx, project, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bare.Gate() == nil || bare.Supervisor() == nil || bare.Bus() != nil || bare.Pipeline() != nil || bare.Tools() != nil {
		t.Errorf("Open() = gate %v, supervisor %v, bus %v, pipeline %v, tools %v; want only the gate and the supervisor",
			bare.Gate() != nil, bare.Supervisor() != nil, bare.Bus() != nil, bare.Pipeline() != nil, bare.Tools() != nil)
	}
	if _, err := bare.StartWork(ctx, "", nil); err == nil || !strings.Contains(err.Error(), "WithTools") {
		t.Errorf("StartWork on a host without tools = %v, want an error naming WithTools", err)
	}
	if err := bare.Close(ctx); err != nil {
		t.Errorf("Close = %v", err)
	}

	h, err := Open(ctx, project, nil, WithBus(""), WithTools())
	if err != nil {
		t.Fatal(err)
	}
	if h.Bus() == nil || h.Pipeline() == nil || h.Tools() == nil {
		t.Fatalf("Open(WithBus, WithTools) left out a part: bus %v, pipeline %v, tools %v", h.Bus() != nil, h.Pipeline() != nil, h.Tools() != nil)
	}
	var builtinAgents, running int
	for _, st := range h.Supervisor().Status() {
		if strings.HasPrefix(st.Name, agents.AgentID("")) {
			builtinAgents++
		}
		if st.Running {
			running++
		}
	}
	if builtinAgents != len(agents.RoleNames()) || running != 0 {
		t.Errorf("supervisor has %d built-in agents and %d running plugins, want %d and none", builtinAgents, running, len(agents.RoleNames()))
	}
	all, _ := h.Hooks()
	var sources []string
	for _, r := range all {
		if !slices.Contains(sources, r.Source) {
			sources = append(sources, r.Source)
		}
	}
	if !slices.Contains(sources, "builtin") || !slices.Contains(sources, "bus") {
		t.Errorf("hook sources = %v, want the built-ins and the bus peers", sources)
	}
	if err := h.Close(ctx); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := h.Bus().Publish(ctx, bus.Message{Topic: "x"}); err == nil {
		t.Error("the bus still publishes after Close")
	}
}
