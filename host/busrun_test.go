package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

const busRunPlan = "# Demo\n\n## TODOs\n\n- [ ] 1. Say hi\n  ```sh\n  echo hi\n  ```\n- [ ] 2. Say bye\n  ```sh\n  echo bye\n  ```\n"

// A real start-work run publishes its loop events, and a bus peer acting
// as a hook sees (and may block) its tool calls.
func TestStartWorkOnTheBus(t *testing.T) {
	tests := []struct {
		name       string
		block      bool
		wantStatus Status
		wantLast   loop.Kind
		// wantStates is the number of STATEs before the last event.
		wantStates int
	}{
		{"completes", false, StatusDone, loop.KindDone, 5},
		{"blocked by a peer", true, StatusFailed, loop.KindAbort, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			project := newProject(t, map[string]string{"demo": busRunPlan})
			b, _ := bus.NewMemory(bus.DefaultOptions())
			defer b.Close()
			ctx := context.Background()
			var mu sync.Mutex
			var commands []string
			_, err := b.Subscribe(ctx, BusHookTopic(plugins.EventToolExecuteBefore), func(ctx context.Context, m bus.Message) (bus.Ack, error) {
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
			rec := recordLoop(t, b)
			regs, err := BusHooks(ctx, b, config.Default())
			if err != nil {
				t.Fatal(err)
			}
			pipeline, err := hooks.NewPipeline(regs, hooks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := config.Default()
			cfg.Runbook.Retries = 0
			res, err := StartWork(ctx, StartWorkOptions{Project: project, Name: "demo", Config: cfg, Hooks: pipeline,
				Observe: LoopObserver(ctx, b, project, nil, nil)})
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
			if as := anchors(t, b); len(as) != 1 {
				t.Errorf("anchors = %+v, want one at the end of the run", as)
			}
		})
	}
}
