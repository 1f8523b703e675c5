package busface

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/run/runtest"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/bus/jsonrpc/jsonrpctest"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/host/supervisor"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

// wsBus is a memory bus served on 127.0.0.1 over JSON-RPC, with the admin
// routes, as `weave bus serve --ws` runs it.
type wsBus struct {
	bus *bus.Memory
	url string
}

func startWSBus(t testing.TB, token string) *wsBus {
	t.Helper()
	s := jsonrpctest.Serve(t, token)
	return &wsBus{bus: s.Bus, url: s.URL}
}

// peer dials the bus as an outside peer would.
func (w *wsBus) peer(t *testing.T, id string) *jsonrpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	c, err := jsonrpc.Dial(ctx, w.url, jsonrpc.ClientInfo{Name: "peer", Version: "1"}, jsonrpc.WithClientID(id), jsonrpc.WithoutReconnect())
	if err != nil {
		t.Fatalf("Dial(%s) = %v", w.url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func openBus(t *testing.T, cfg *config.Config, url string) bus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	b, closeBus, err := Open(ctx, cfg, url)
	if err != nil {
		t.Fatalf("Open(%q) = %v", url, err)
	}
	t.Cleanup(func() { _ = closeBus() })
	return b
}

func TestOpenBusKinds(t *testing.T) {
	ws := startWSBus(t, "")
	natsURL := bustest.StartNATS(t).URL()
	tests := []struct {
		name string
		url  string
	}{
		{"memory", ""},
		{"nats", natsURL},
		{"ws", ws.url},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := openBus(t, config.Default(), tc.url)
			rec := bustest.Processed()
			if _, err := b.Subscribe(ctx, "agent:probe", rec.Handle, bus.SubscribeOptions{Name: "probe"}); err != nil {
				t.Fatalf("Subscribe = %v", err)
			}
			res, err := b.Request(ctx, bus.Message{Topic: "agent:probe", Payload: json.RawMessage(`{"type":"probe"}`)})
			if err != nil {
				t.Fatalf("Request = %v", err)
			}
			if !res.Processed() || res.Delivered != 1 {
				t.Errorf("Request(agent:probe) = %+v, want one processed ack", res)
			}
			// loop:current is retained on every kind, readable back.
			if _, err := b.Publish(ctx, bus.Message{Topic: "loop:current", Payload: json.RawMessage(`{"type":"loop.event","n":1}`)}); err != nil {
				t.Fatalf("Publish(loop:current) = %v", err)
			}
			m, ok, err := b.Retained(ctx, "loop:current")
			if err != nil || !ok || !strings.Contains(string(m.Payload), `"n":1`) {
				t.Errorf("Retained(loop:current) = %s, %v, %v; want the published payload", m.Payload, ok, err)
			}
		})
	}
}

func TestOpenBusErrors(t *testing.T) {
	natsNoURL := config.Default()
	natsNoURL.Bus.Backend = "nats"
	badPolicy := config.Default()
	badPolicy.Bus.DefaultPolicy = "everyone"
	tests := []struct {
		name string
		cfg  *config.Config
		url  string
		want string
	}{
		{"nats without url", natsNoURL, "", "bus.url"},
		{"unknown scheme", config.Default(), "http://127.0.0.1:1", "ws://HOST:PORT"},
		{"bad policy", badPolicy, "", "default_policy"},
		{"ws nobody listens", config.Default(), "ws://127.0.0.1:1", "dial bus"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
			defer cancel()
			_, _, err := Open(ctx, tc.cfg, tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%q) = %v, want an error mentioning %q", tc.url, err, tc.want)
			}
		})
	}
}

func TestOpenBusWSToken(t *testing.T) {
	ws := startWSBus(t, "s3cret")
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // no token file either
	// On loopback a client without the token joins for plain topics, but
	// the admin routes refuse it.
	guest := openBus(t, config.Default(), ws.url)
	if _, _, err := guest.Retained(ctx, "loop:current"); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("Retained without token = %v, want unauthorized", err)
	}
	t.Setenv(TokenEnv, "s3cret")
	b := openBus(t, config.Default(), ws.url)
	if _, _, err := b.Retained(ctx, "loop:current"); err != nil {
		t.Errorf("Retained with the token from %s = %v, want nil", TokenEnv, err)
	}
}

// answer makes a peer handler that acks with result, in the ack's result
// field (which the JSON-RPC face carries too).
func answer(result string, stop bool) bus.Handler {
	return func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true, StopPropagation: stop, Result: json.RawMessage(result)}, nil
	}
}

func busPipeline(t testing.TB, b bus.Bus) *hooks.Pipeline {
	t.Helper()
	regs, err := Hooks(context.Background(), b, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	p, err := hooks.NewPipeline(regs, hooks.Options{})
	if err != nil {
		t.Fatalf("NewPipeline(bus hooks) = %v", err)
	}
	return p
}

func toolEvent(cmd string) plugins.Event {
	return plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolBash, Args: map[string]any{"command": cmd}, Time: time.Now()}
}

func TestBusHooksOverWebSocket(t *testing.T) {
	topic := HookTopic(plugins.EventToolExecuteBefore)
	tests := []struct {
		name string
		// peers subscribe in order (the last one is asked first).
		peers []bus.Handler
		// patterns, when set, are the peers' patterns; an identical
		// newer pattern would supersede an older one.
		patterns    []string
		wantAction  plugins.Action
		wantReason  string
		wantArgs    map[string]any
		wantContext []string
		wantFailed  bool
	}{
		{name: "no peer allows", wantAction: plugins.Allow, wantArgs: map[string]any{"command": "ls"}},
		{
			name:       "a peer blocks",
			peers:      []bus.Handler{answer(`{"action":"block","reason":"no ls today"}`, true)},
			wantAction: plugins.Block, wantReason: "bus.tool.execute.before: peer-0: no ls today",
			wantArgs: map[string]any{"command": "ls"},
		},
		{
			name:       "a peer modifies and adds context",
			peers:      []bus.Handler{answer(`{"action":"modify","args":{"command":"ls -la"},"context":"listing in full"}`, false)},
			wantAction: plugins.Modify, wantArgs: map[string]any{"command": "ls -la"}, wantContext: []string{"listing in full"},
		},
		{
			name:       "a plain processed ack allows",
			peers:      []bus.Handler{answer(`{}`, false)},
			wantAction: plugins.Allow, wantArgs: map[string]any{"command": "ls"},
		},
		{
			name: "block beats an earlier modify",
			// peer-1 (newest) modifies and lets the walk go on; peer-0 blocks.
			peers: []bus.Handler{
				answer(`{"action":"block","reason":"still no"}`, true),
				func(ctx context.Context, m bus.Message) (bus.Ack, error) {
					r := `{"action":"modify","args":{"command":"ls /"}}`
					return bus.Ack{Processed: false, Message: r, Result: json.RawMessage(r)}, nil
				},
			},
			patterns:   []string{"hook:tool.execute.*", topic},
			wantAction: plugins.Block, wantReason: "bus.tool.execute.before: peer-0: still no",
			wantArgs: map[string]any{"command": "ls"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := startWSBus(t, "")
			ctx := context.Background()
			for i, h := range tc.peers {
				c := ws.peer(t, "peer-"+string(rune('0'+i)))
				pattern := topic
				if tc.patterns != nil {
					pattern = tc.patterns[i]
				}
				if err := c.Subscribe(ctx, pattern, h, jsonrpc.SubscribeOptions{}); err != nil {
					t.Fatalf("peer subscribe = %v", err)
				}
			}
			// The host joins the same bus over WebSocket, as start-work --bus does.
			host := openBus(t, config.Default(), ws.url)
			out, err := busPipeline(t, host).Run(ctx, toolEvent("ls"))
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			if out.Action != tc.wantAction || out.Reason != tc.wantReason {
				t.Errorf("Run() = %s %q, want %s %q (reports %+v)", out.Action, out.Reason, tc.wantAction, tc.wantReason, out.Reports)
			}
			if diff := cmp.Diff(tc.wantArgs, out.Args); diff != "" {
				t.Errorf("Run() args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantContext, out.Context); diff != "" {
				t.Errorf("Run() context (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBusHooksPeerSeesTheEvent(t *testing.T) {
	ws := startWSBus(t, "")
	ctx := context.Background()
	got := make(chan json.RawMessage, 1)
	c := ws.peer(t, "watcher")
	err := c.Subscribe(ctx, "hook:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		got <- m.Payload
		return bus.Ack{Processed: true}, nil
	}, jsonrpc.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := busPipeline(t, ws.bus).Run(ctx, toolEvent("make test")); err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(bustest.Recv(t, "the hook request", got), &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "hook.event", "name": "tool.execute.before", "tool": "bash", "args": map[string]any{"command": "make test"}}
	for k, v := range want {
		if !cmp.Equal(p[k], v) {
			t.Errorf("payload[%q] = %v, want %v (payload %v)", k, p[k], v, p)
		}
	}
}

func TestBusHooksPeerDisconnectsFailsOpen(t *testing.T) {
	ws := startWSBus(t, "")
	ctx := context.Background()
	c := ws.peer(t, "quitter")
	err := c.Subscribe(ctx, HookTopic(plugins.EventToolExecuteBefore), func(hctx context.Context, m bus.Message) (bus.Ack, error) {
		go c.Close() // the peer goes away mid-request
		<-hctx.Done()
		return bus.Ack{}, hctx.Err()
	}, jsonrpc.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := busPipeline(t, ws.bus)
	done := make(chan hooks.Outcome, 1)
	go func() {
		out, _ := p.Run(ctx, toolEvent("ls"))
		done <- out
	}()
	out := bustest.Recv(t, "the pipeline's outcome", done)
	if out.Action != plugins.Allow {
		t.Errorf("Run() with a peer that disconnects = %s %q, want allow (fail open)", out.Action, out.Reason)
	}
	if len(out.Reports) != 1 || out.Reports[0].Error == "" || out.Reports[0].Policy != hooks.FailOpen {
		t.Errorf("reports = %+v, want one failure under policy open", out.Reports)
	}
}

func TestBusHooksRegistered(t *testing.T) {
	regs, err := Hooks(context.Background(), bus.Bus(nil), nil)
	if err == nil {
		t.Fatalf("Hooks(nil bus) = %d hooks, want an error", len(regs))
	}
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	regs, err = Hooks(context.Background(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != len(plugins.Events) {
		t.Fatalf("Hooks() = %d entries, want one per event (%d)", len(regs), len(plugins.Events))
	}
	for i, r := range regs {
		ev := plugins.Events[i]
		if r.Info.Name != "bus."+ev || r.Source != hooks.SourceBus || r.Fail != hooks.FailOpen || r.Info.Priority != HookPriority || r.Detail != "hook:"+ev {
			t.Errorf("entry %d = %+v, want bus.%s from source bus, fail open, priority %d, on hook:%s", i, r, ev, HookPriority, ev)
		}
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		acks    []bus.Ack
		want    plugins.Decision
		wantErr bool
	}{
		{"no acks", nil, plugins.Decision{Action: plugins.Allow}, false},
		{"context from two peers", []bus.Ack{
			{Subscriber: "a", Processed: true, Result: json.RawMessage(`{"context":"one"}`)},
			{Subscriber: "b", Processed: true, Message: `{"context":"two"}`},
		}, plugins.Decision{Action: plugins.Allow, Context: "one\n\ntwo"}, false},
		{"last modify wins", []bus.Ack{
			{Subscriber: "a", Result: json.RawMessage(`{"action":"modify","text":"first"}`)},
			{Subscriber: "b", Result: json.RawMessage(`{"action":"modify","text":"second"}`)},
		}, plugins.Decision{Action: plugins.Modify, Text: "second"}, false},
		{"block without reason", []bus.Ack{{Subscriber: "a", Result: json.RawMessage(`{"action":"BLOCK"}`)}},
			plugins.Decision{Action: plugins.Block, Reason: "a: blocked (the peer gave no reason)"}, false},
		{"plain message is no decision", []bus.Ack{{Subscriber: "a", Processed: true, Message: "ok, seen"}},
			plugins.Decision{Action: plugins.Allow}, false},
		{"a failed peer is passed over", []bus.Ack{
			{Subscriber: "dead", Error: "timed out"},
			{Subscriber: "b", Result: json.RawMessage(`{"action":"block","reason":"no"}`)},
		}, plugins.Decision{Action: plugins.Block, Reason: "b: no"}, false},
		{"every peer failed", []bus.Ack{{Subscriber: "dead", Error: "disconnected"}}, plugins.Decision{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decide(bus.Result{Acks: tc.acks})
			if (err != nil) != tc.wantErr {
				t.Fatalf("decide() error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decide() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBusDelegatorToPeer(t *testing.T) {
	ws := startWSBus(t, "")
	ctx := context.Background()
	got := make(chan map[string]any, 1)
	peer := ws.peer(t, "thread-peer")
	err := peer.Subscribe(ctx, "agent:thread", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		var p map[string]any
		_ = json.Unmarshal(m.Payload, &p)
		got <- p
		return bus.Ack{Processed: true, StopPropagation: true, Message: "found 3 callers of Parse"}, nil
	}, jsonrpc.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := Delegator{Bus: openBus(t, config.Default(), ws.url)}
	answer, err := d.Delegate(ctx, tools.Caller{Agent: "loom"}, "s1", "thread", "find the callers of Parse")
	if err != nil {
		t.Fatalf("Delegate(thread) = %v", err)
	}
	if answer != "found 3 callers of Parse" {
		t.Errorf("Delegate(thread) = %q, want the peer's answer", answer)
	}
	p := bustest.Recv(t, "the delegation request", got)
	want := map[string]any{"type": "agent.request", "prompt": "find the callers of Parse", "from": []any{"loom"}, "session_id": "s1"}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("request payload (-want +got):\n%s", diff)
	}

	if _, err := d.Delegate(ctx, tools.Caller{Agent: "loom"}, "s1", "nobody", "hi"); err == nil || !strings.Contains(err.Error(), "no agent answers on agent:nobody") {
		t.Errorf("Delegate(nobody) = %v, want an error saying nothing answers on agent:nobody", err)
	}
}

func TestBusDelegatorResults(t *testing.T) {
	tests := []struct {
		name    string
		ack     bus.Ack
		want    string
		wantErr string
	}{
		{"result output", bus.Ack{Processed: true, Result: json.RawMessage(`{"output":"done it"}`)}, "done it", ""},
		{"message holding a result", bus.Ack{Processed: true, Message: `{"output":"from message"}`}, "from message", ""},
		{"result error", bus.Ack{Processed: true, Result: json.RawMessage(`{"output":"","error":"verify failed"}`)}, "", "verify failed"},
		{"not processed", bus.Ack{Processed: false, Message: "busy"}, "", "busy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := bus.NewMemory(bus.DefaultOptions())
			defer b.Close()
			ack := tc.ack
			if _, err := b.Subscribe(context.Background(), "agent:warp", func(context.Context, bus.Message) (bus.Ack, error) { return ack, nil }, bus.SubscribeOptions{Name: "w"}); err != nil {
				t.Fatal(err)
			}
			got, err := Delegator{Bus: b}.Delegate(context.Background(), tools.Caller{Agent: "loom"}, "s1", "Warp", "review")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Delegate() = %q, %v; want an error mentioning %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Delegate() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// echoAgent answers with its prompt and records the caller it was given.
type echoAgent struct{ err error }

func (echoAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "echo", Kind: plugins.KindAgent}, nil
}

func (a echoAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	if a.err != nil {
		return plugins.AgentResponse{}, a.err
	}
	return plugins.AgentResponse{Output: "echo: " + req.Prompt + " as " + h.(callerHost).c.String(), Done: true}, nil
}

type callerHost struct {
	plugins.Host
	c tools.Caller
}

func TestAgentHandlerThroughDelegator(t *testing.T) {
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	ctx := context.Background()
	var sessions []string
	services := func(c tools.Caller, session string) plugins.Host {
		sessions = append(sessions, session)
		return callerHost{c: c}
	}
	if _, err := b.Subscribe(ctx, AgentTopic("thread"), agentHandler("thread", echoAgent{}, services), bus.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Subscribe(ctx, AgentTopic("spindle"), agentHandler("spindle", echoAgent{err: errors.New("plugin died")}, services), bus.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	d := Delegator{Bus: b}
	got, err := d.Delegate(ctx, tools.Caller{Agent: "tapestry", Chain: []string{"loom", "tapestry"}}, "s1", "thread", "look")
	if want := "echo: look as loom > tapestry > thread"; err != nil || got != want {
		t.Errorf("Delegate(thread) = %q, %v; want %q (the chain carried over the bus)", got, err, want)
	}
	if len(sessions) != 1 || sessions[0] != "s1" {
		t.Errorf("delegated services got sessions %q, want the delegation's session s1", sessions)
	}
	if _, err := d.Delegate(ctx, tools.Caller{Agent: "loom"}, "s1", "spindle", "look"); err == nil || !strings.Contains(err.Error(), "plugin died") {
		t.Errorf("Delegate(spindle) = %v, want the agent's failure", err)
	}
	// A payload without a prompt is refused with what to send.
	res, err := b.Request(ctx, bus.Message{Topic: "agent:thread", Payload: json.RawMessage(`{"type":"agent.request"}`)})
	if err != nil || res.Processed() || len(res.Acks) != 1 || !strings.Contains(res.Acks[0].Message, `"prompt"`) {
		t.Errorf("Request(agent:thread, no prompt) = %+v, %v; want a not-processed ack asking for a prompt", res, err)
	}
}

func TestServeAgentsOnBusSubscribesEveryRole(t *testing.T) {
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	sup, err := supervisor.New(supervisor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background())
	ctx := context.Background()
	stop, err := ServeAgents(ctx, b, sup, agents.RoleNames(), func(c tools.Caller, _ string) plugins.Host { return callerHost{c: c} })
	if err != nil {
		t.Fatalf("ServeAgents = %v", err)
	}
	// The supervisor knows no agent plugin here, so the call reaches it
	// and fails with its error: proof the subscription leads to sup.
	_, err = Delegator{Bus: b}.Delegate(ctx, tools.Caller{Agent: "loom"}, "s1", "pattern", "plan it")
	if err == nil || !strings.Contains(err.Error(), `no plugin named "weave.agent.pattern"`) {
		t.Errorf("Delegate(pattern) = %v, want the supervisor's no-plugin error", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop = %v", err)
	}
	if _, err := (Delegator{Bus: b}).Delegate(ctx, tools.Caller{Agent: "loom"}, "s1", "pattern", "plan it"); err == nil || !strings.Contains(err.Error(), "no agent answers") {
		t.Errorf("Delegate(pattern) after stop = %v, want nothing subscribed", err)
	}
}

func TestToolServicesKeepTheCeiling(t *testing.T) {
	project := t.TempDir()
	gate, err := tools.NewGate(config.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tools.New(project, config.Default(), gate, nil)
	if err != nil {
		t.Fatal(err)
	}
	services := ToolServices(tl, "s1", nil)
	write := plugins.ToolCall{Tool: plugins.ToolWrite, Args: map[string]any{"path": "a.txt", "content": "hi"}}
	tests := []struct {
		caller     tools.Caller
		wantDenied bool
	}{
		{tools.Caller{Agent: "tapestry"}, false},
		{tools.Caller{Agent: "loom"}.Delegated("thread"), true},
	}
	for _, tc := range tests {
		res, err := services(tc.caller, "").CallTool(context.Background(), write)
		if err != nil {
			t.Fatalf("CallTool(write) as %s = %v", tc.caller, err)
		}
		if res.Denied != tc.wantDenied {
			t.Errorf("CallTool(write) as %s denied = %v (%s), want %v", tc.caller, res.Denied, res.Output, tc.wantDenied)
		}
	}
}

func TestBusOptionsFromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Bus.DefaultPolicy = "continueAll"
	cfg.Bus.MaxAttempts = 5
	cfg.Bus.RequestTimeout = 7 * time.Second
	cfg.Bus.IdempotencyWindow = 0
	cfg.Bus.QueueSize = 64
	cfg.Bus.MaxLogMessages = 500
	cfg.Bus.MaxDeadLetters = 20
	got, err := Options(cfg)
	if err != nil {
		t.Fatalf("Options() = %v", err)
	}
	want := bus.DefaultOptions()
	want.DefaultPolicy = bus.ContinueAll
	want.MaxAttempts = 5
	want.RequestTimeout = 7 * time.Second
	want.IdempotencyWindow = time.Nanosecond // off
	want.QueueSize = 64
	want.MaxLogMessages = 500
	want.MaxDeadLetters = 20
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Options() (-want +got):\n%s", diff)
	}
	cfg.Bus.DefaultPolicy = "loud"
	if _, err := Options(cfg); err == nil || !strings.Contains(err.Error(), "bus.default_policy") {
		t.Errorf("Options(policy loud) = %v, want an error naming bus.default_policy", err)
	}
}

func TestLoopStatus(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	t.Setenv(URLEnv, "")
	if info, err := LoopStatus(ctx, config.Default(), "", t0); info != nil || err != nil {
		t.Errorf("LoopStatus(no bus URL) = %+v, %v; want nil, nil", info, err)
	}
	ws := startWSBus(t, "")
	// The run joins the bus over WebSocket, as start-work --bus does.
	obs := run.LoopObserver(ctx, openBus(t, config.Default(), ws.url), runtest.NewProject(t, map[string]string{"demo": "# Demo\n"}), nil, nil)
	obs(run.Event{Type: run.EventPlanStarted, Time: t0, Plan: "demo", Completed: 0, Total: 2})
	obs(run.Event{Type: run.EventTaskStarted, Time: t0.Add(time.Second), Plan: "demo", Task: 1, Title: "One", Completed: 0, Total: 2})
	info, err := LoopStatus(ctx, config.Default(), ws.url, t0.Add(10*time.Second))
	if err != nil {
		t.Fatalf("LoopStatus(%s) = %v", ws.url, err)
	}
	if info.Bus != ws.url || info.Event == nil || info.Event.Kind != loop.KindState || info.Stale {
		t.Errorf("LoopStatus() = %+v, want a fresh STATE from %s", info, ws.url)
	}
}

// The topics the host on the bus spells are the topic table's.
func TestTopicsAreTheTables(t *testing.T) {
	for _, tt := range []struct {
		topic, owner string
	}{
		{HookTopic(plugins.EventToolExecuteBefore), bus.OwnerHooks},
		{AgentTopic("Tapestry"), bus.OwnerAgents},
	} {
		row, ok := bus.TopicOf(tt.topic)
		if !ok || row.Owner != tt.owner || !row.Protected {
			t.Errorf("TopicOf(%q) = %+v, %v; want a protected topic of %s", tt.topic, row, ok, tt.owner)
		}
	}
	if bus.MayLaunch(HookTopic(plugins.EventToolExecuteBefore)) || !bus.MayLaunch(AgentTopic("tapestry")) {
		t.Errorf("the default handler may start an agent on hook topics, or not on agent topics; want only the latter")
	}
}
