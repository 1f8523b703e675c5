package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
)

const initFrame = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientId":"c1","clientInfo":{"name":"raw","version":"1"}}}`

// TestFrames sends raw frames to an initialized connection and compares the
// reply ("" means no reply: the test checks that the next frame answers a
// ping sent after).
func TestFrames(t *testing.T) {
	tests := []struct {
		name, frame, want string
	}{
		{"bad JSON", `{"jsonrpc":"2.0",`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`},
		{"not JSON at all", `hello`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`},
		{"empty frame", ``, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`},
		{"not an object", `42`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600}}`},
		{"wrong version", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32600}}`},
		{"no version", `{"id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32600}}`},
		{"method not a string", `{"jsonrpc":"2.0","id":5,"method":7}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32600}}`},
		{"bad id type", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600}}`},
		{"params not structured", `{"jsonrpc":"2.0","id":5,"method":"ping","params":3}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32600}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":"x","method":"fly"}`, `{"jsonrpc":"2.0","id":"x","error":{"code":-32601}}`},
		{"ping with string id", `{"jsonrpc":"2.0","id":"p","method":"ping","params":{}}`, `{"jsonrpc":"2.0","id":"p","result":{}}`},
		{"ping with null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{"notification gets no reply", `{"jsonrpc":"2.0","method":"ping"}`, ``},
		{"unknown notification gets no reply", `{"jsonrpc":"2.0","method":"fly"}`, ``},
		{"empty batch", `[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600}}`},
		{"batch of notifications", `[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"sendMessage","params":{"topic":"t:1","payload":{"type":"x"}}}]`, ``},
		{"mixed batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"ping"},1,{"jsonrpc":"2.0","id":2,"method":"fly"},{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{}}]`,
			`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601}},{"jsonrpc":"2.0","id":3,"error":{"code":-32602}}]`},
		{"batch with bad JSON", `[{"jsonrpc":"2.0","id":1,"method":"ping"},`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`},
	}
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	r := h.raw(t)
	r.init("c1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.t = t
			r.send(tt.frame)
			r.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
			isAfter := func(v any) bool {
				m, ok := v.(map[string]any)
				return ok && m["id"] == "after"
			}
			if tt.want == "" {
				if got := r.recv(); !isAfter(got) {
					t.Fatalf("frame %s got reply %v, want none", tt.frame, got)
				}
				// sendMessage runs like a batch, off the read loop: a stray
				// reply would come before this one.
				if got := r.roundTrip(`{"jsonrpc":"2.0","id":"after2","method":"sendMessage","params":{"topic":"none:1","payload":{"type":"x"}}}`); got.(map[string]any)["id"] != "after2" {
					t.Fatalf("frame %s got reply %v, want none", tt.frame, got)
				}
				return
			}
			// Batches run off the read loop, so the ping may come first.
			got, after := r.recv(), r.recv()
			if isAfter(got) {
				got, after = after, got
			}
			want := decode(t, tt.want)
			if diff := cmp.Diff(want, got, ignoreMessages, cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == `["result"]`
			}, cmp.Comparer(func(a, b any) bool { return (a == nil) == (b == nil) }))); diff != "" {
				t.Errorf("reply to %s (-want +got):\n%s", tt.frame, diff)
			}
			if !isAfter(after) {
				t.Errorf("after %s: next frame = %v, want the ping answer", tt.frame, after)
			}
		})
	}
}

func TestHandshake(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{ServerID: "bus-1", Topics: []string{"agent:*"}})
	tests := []struct {
		name  string
		frame string
		want  float64
	}{
		{"subscribe before initialize", `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"topic":"a:*"}}`, -32001},
		{"sendMessage before initialize", `{"jsonrpc":"2.0","id":1,"method":"sendMessage","params":{"topic":"a:1","payload":{"type":"x"}}}`, -32001},
		{"unsubscribe before initialize", `{"jsonrpc":"2.0","id":1,"method":"unsubscribe","params":{"topic":"a:*"}}`, -32001},
		// bub's server answers ping before initialize -32001 too.
		{"ping before initialize", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`, -32001},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, -32002},
		{"no clientId", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}`, -32002},
		{"clientId with space", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientId":"a b","clientInfo":{"name":"a","version":"1"}}}`, -32002},
		{"clientInfo a string", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientId":"a","clientInfo":"a"}}`, -32002},
		{"clientInfo a list", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientId":"a","clientInfo":[]}}`, -32002},
		{"wrong types", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientId":5,"clientInfo":{"name":"a","version":"1"}}}`, -32002},
	}
	r := h.raw(t)
	for _, tt := range tests {
		if got := errCode(r.roundTrip(tt.frame)); got != tt.want {
			t.Errorf("%s: error code = %v, want %v", tt.name, got, tt.want)
		}
	}
	got := r.roundTrip(initFrame)
	want := decode(t, `{"jsonrpc":"2.0","id":1,"result":{"serverId":"bus-1","serverInfo":{"name":"weave-bus","version":"1"},
		"capabilities":{"subscribe":true,"publish":true,"processMessage":true,"topics":["agent:*"]}}}`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("initialize (-want +got):\n%s", diff)
	}
	// A second initialize answers like the first, even under another id.
	again := r.roundTrip(strings.Replace(initFrame, `"clientId":"c1"`, `"clientId":"c2"`, 1))
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("second initialize (-want +got):\n%s", diff)
	}
	if got := errCode(r.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}`)); got != 0 {
		t.Errorf("ping after initialize: error code = %v, want a result", got)
	}
}

func TestMethodErrors(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{MaxSubscriptions: 3})
	r := h.raw(t)
	r.init("c1")
	steps := []struct {
		name   string
		method string
		params string
		want   float64
	}{
		{"subscribe", "subscribe", `{"topic":"a:*"}`, 0},
		{"subscribe missing topic", "subscribe", `{}`, -32602},
		{"subscribe empty topic", "subscribe", `{"topic":""}`, -32602},
		{"subscribe no params", "subscribe", ``, -32602},
		{"subscribe bad pattern", "subscribe", `{"topic":"a:[b"}`, -32602},
		{"subscribe bad policy", "subscribe", `{"topic":"b:*","policy":"sometimes"}`, -32602},
		{"subscribe bad method", "subscribe", `{"topic":"b:*","method":"teleport"}`, -32602},
		{"same pattern again", "subscribe", `{"topic":"a:*"}`, 0},
		{"second pattern", "subscribe", `{"topic":"b:*","policy":"continueAll"}`, 0},
		{"third pattern", "subscribe", `{"topic":"c:*","method":"processMessage"}`, 0},
		{"over the limit", "subscribe", `{"topic":"d:*"}`, -32006},
		{"unsubscribe unknown", "unsubscribe", `{"topic":"zzz"}`, -32004},
		{"unsubscribe missing topic", "unsubscribe", `{}`, -32602},
		{"unsubscribe", "unsubscribe", `{"topic":"c:*"}`, 0},
		{"unsubscribe twice", "unsubscribe", `{"topic":"c:*"}`, -32004},
		{"room again", "subscribe", `{"topic":"d:*"}`, 0},
		{"send missing topic", "sendMessage", `{"payload":{"type":"x"}}`, -32602},
		{"send wildcard topic", "sendMessage", `{"topic":"a:*","payload":{"type":"x"}}`, -32602},
		{"send missing payload", "sendMessage", `{"topic":"x:1"}`, -32602},
		{"send payload not an object", "sendMessage", `{"topic":"x:1","payload":"hi"}`, -32602},
		{"send payload without type", "sendMessage", `{"topic":"x:1","payload":{"text":"hi"}}`, 0},
		{"send to nobody", "sendMessage", `{"topic":"x:1","payload":{"type":"x"}}`, 0},
	}
	for i, s := range steps {
		frame := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, i+10, s.method)
		if s.params != "" {
			frame += `,"params":` + s.params
		}
		frame += "}"
		if got := errCode(r.roundTrip(frame)); got != s.want {
			t.Errorf("%s: error code = %v, want %v", s.name, got, s.want)
		}
	}
}

// TestSendMessageResult checks the aggregated result and the delivery a
// raw subscriber sees.
func TestSendMessageResult(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	sub := h.raw(t)
	sub.init("agent-other-agent-456")
	sub.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"topic":"agent:other-agent-456","method":"processMessage"}}`)
	pub := h.client(t, "pub")
	done := make(chan jsonrpc.SendResult, 1)
	go func() {
		res, err := pub.SendMessage(context.Background(), "agent:other-agent-456", payload("task_request", "task_id", "task-789"))
		if err != nil {
			t.Errorf("SendMessage: %v", err)
		}
		done <- res
	}()
	call := sub.recv().(map[string]any)
	params := call["params"].(map[string]any)
	wantCall := map[string]any{"topic": "agent:other-agent-456", "payload": map[string]any{"type": "task_request", "task_id": "task-789"},
		"attempt": float64(1), "subscription": "agent:other-agent-456", "headers": map[string]any{jsonrpc.ClientIDHeader: "pub"}}
	delete(params, "messageId")
	if call["method"] != "processMessage" || call["id"] == nil {
		t.Errorf("delivery = %v, want a processMessage request", call)
	}
	if diff := cmp.Diff(wantCall, params); diff != "" {
		t.Errorf("delivery params (-want +got):\n%s", diff)
	}
	id, _ := json.Marshal(call["id"])
	sub.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"processed":true,"should_retry":false,"retry_seconds":0,"message":"Task accepted"}}`)
	res := bustest.Recv(t, "sendMessage result", done)
	want := jsonrpc.SendResult{Success: true, Acks: []jsonrpc.AckInfo{{ClientID: "agent-other-agent-456", Processed: true, Message: "Task accepted"}},
		MessageID: res.MessageID, Delivered: 1}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("SendMessage result (-want +got):\n%s", diff)
	}
}

// TestPatternsThroughFace: which connection gets which topic, and last
// match wins across connections.
func TestPatternsThroughFace(t *testing.T) {
	h := newHarness(t, bus.Options{DefaultPolicy: bus.ContinueAll}, jsonrpc.Options{})
	ctx := context.Background()
	subs := []struct{ id, pattern string }{
		{"A", "inbound:*"}, {"B", "inbound:critical"}, {"C", "inbound:*"},
		{"exact", "agent:w-1"}, {"prefix", "inbound:chat-"}, {"glob", "task:[0-9]"},
	}
	for _, s := range subs {
		c := h.client(t, s.id)
		if err := c.Subscribe(ctx, s.pattern, func(context.Context, bus.Message) (bus.Ack, error) {
			return bus.Ack{Processed: true}, nil
		}, jsonrpc.SubscribeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pub := h.client(t, "pub")
	tests := []struct {
		topic string
		want  []string
	}{
		{"inbound:critical", []string{"C", "B"}},
		{"inbound:normal", []string{"C"}},
		{"inbound:chat-1", []string{"prefix", "C"}},
		{"agent:w-1", []string{"exact"}},
		{"agent:w-10", nil},
		{"task:7", []string{"glob"}},
		{"task:77", nil},
	}
	for _, tt := range tests {
		res, err := pub.SendMessage(ctx, tt.topic, payload("x"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range res.Acks {
			got = append(got, a.ClientID)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SendMessage(%s) acks (-want +got):\n%s", tt.topic, diff)
		}
		if res.Success != (len(tt.want) > 0) {
			t.Errorf("SendMessage(%s).Success = %v, want %v", tt.topic, res.Success, len(tt.want) > 0)
		}
	}
}

// TestPolicies runs each policy with two connections subscribed to one
// topic: the newer one answers, the older one is reached or not.
func TestPolicies(t *testing.T) {
	tests := []struct {
		policy      bus.Policy
		ack         bus.Ack
		wantOlder   bool
		wantStopped bool // the subscriber asked to stop
	}{
		{"", bus.Ack{Processed: true}, false, false},
		{bus.StopOnProcessed, bus.Ack{}, true, false},
		{bus.StopOnProcessed, bus.Ack{StopPropagation: true}, false, true},
		{bus.StopOnStop, bus.Ack{Processed: true}, true, false},
		{bus.StopOnStop, bus.Ack{StopPropagation: true}, false, true},
		{bus.ContinueAll, bus.Ack{Processed: true, StopPropagation: true}, true, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%+v", tt.policy, tt.ack), func(t *testing.T) {
			h := newHarness(t, bus.Options{}, jsonrpc.Options{})
			ctx := context.Background()
			older := bustest.Processed()
			if err := h.client(t, "older").Subscribe(ctx, "p:*", older.Handle, jsonrpc.SubscribeOptions{Policy: bus.ContinueAll}); err != nil {
				t.Fatal(err)
			}
			newer := bustest.NewRecorder(tt.ack)
			if err := h.client(t, "newer").Subscribe(ctx, "p:x", newer.Handle, jsonrpc.SubscribeOptions{Policy: tt.policy}); err != nil {
				t.Fatal(err)
			}
			res, err := h.client(t, "pub").SendMessage(ctx, "p:x", payload("x"))
			if err != nil {
				t.Fatal(err)
			}
			if got := older.Len() == 1; got != tt.wantOlder {
				t.Errorf("older reached = %v, want %v (acks %+v)", got, tt.wantOlder, res.Acks)
			}
			if res.StopPropagation != tt.wantStopped {
				t.Errorf("stopPropagation = %v, want %v", res.StopPropagation, tt.wantStopped)
			}
			if n := newer.Len(); n != 1 {
				t.Errorf("newer called %d times, want 1", n)
			}
		})
	}
}

func TestOrdering(t *testing.T) {
	const n = 300
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	ctx := context.Background()
	rec := bustest.Processed()
	if err := h.client(t, "sub").Subscribe(ctx, "order:*", rec.Handle, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	pub := h.client(t, "pub")
	for i := range n {
		if _, err := pub.SendMessage(ctx, fmt.Sprintf("order:%d", i%3), payload("x", "n", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Notifications from one connection are handled in order too.
	for i := n; i < 2*n; i++ {
		if err := pub.Notify(ctx, "sendMessage", map[string]any{"topic": "order:n", "payload": payload("x", "n", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range rec.WaitN(t, 2*n) {
		var p struct{ N int }
		_ = json.Unmarshal(m.Payload, &p)
		if p.N != i {
			t.Fatalf("message %d has n=%d, want %d", i, p.N, i)
		}
	}
}

// TestRetryThenDeadLetter: processMessage results asking for a retry feed
// the bus retry, then the dead letters.
func TestRetryThenDeadLetter(t *testing.T) {
	clock := bustest.NewFakeClock(time.Unix(1_700_000_000, 0))
	h := newHarness(t, bus.Options{Clock: clock, MaxAttempts: 3}, jsonrpc.Options{})
	ctx := context.Background()
	agent := bustest.NewRecorder(bus.Ack{ShouldRetry: true, RetrySeconds: 5, Message: "agent unavailable"})
	if err := h.client(t, "agent-1").Subscribe(ctx, "tg:*", agent.Handle, jsonrpc.SubscribeOptions{Method: "processMessage"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan jsonrpc.SendResult, 1)
	bridge := h.client(t, "bridge")
	go func() {
		res, err := bridge.SendMessage(ctx, "tg:123", payload("telegram_message", "text", "hello"))
		if err != nil {
			t.Errorf("SendMessage: %v", err)
		}
		done <- res
	}()
	for attempt := 1; attempt < 3; attempt++ {
		agent.WaitN(t, attempt)
		clock.WaitForTimer(t, 5*time.Second)
		clock.Advance(5 * time.Second)
	}
	res := bustest.Recv(t, "the send to give up", done)
	var attempts []int
	for _, m := range agent.WaitN(t, 3) {
		attempts = append(attempts, m.Attempt)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, attempts); diff != "" {
		t.Errorf("attempts seen by the agent (-want +got):\n%s", diff)
	}
	if !res.DeadLettered || res.Success != true || len(res.Acks) != 1 || res.Acks[0].Processed || !res.Acks[0].ShouldRetry {
		t.Errorf("result = %+v, want one unprocessed ack asking for a retry and DeadLettered", res)
	}
	dls, _ := h.bus.DeadLetters(ctx)
	if len(dls) != 1 || dls[0].Subscriber != "agent-1" || dls[0].Attempts != 3 || dls[0].Message.Topic != "tg:123" {
		t.Errorf("DeadLetters() = %+v, want the message to agent-1 after 3 attempts", dls)
	}
}

// TestSubscriberDisconnectsMidRequest: the publisher gets a not-processed
// ack as soon as the subscriber is gone, well before the bus timeout.
func TestSubscriberDisconnectsMidRequest(t *testing.T) {
	h := newHarness(t, bus.Options{RequestTimeout: time.Hour}, jsonrpc.Options{})
	ctx := context.Background()
	later := bustest.Processed()
	if err := h.client(t, "later").Subscribe(ctx, "job:*", later.Handle, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	sub := h.raw(t)
	sub.init("leaver")
	sub.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"topic":"job:1"}}`)
	done := make(chan jsonrpc.SendResult, 1)
	pub := h.client(t, "pub")
	go func() {
		res, err := pub.SendMessage(ctx, "job:1", payload("x"))
		if err != nil {
			t.Errorf("SendMessage: %v", err)
		}
		done <- res
	}()
	if call := sub.recv().(map[string]any); call["method"] != "sendMessage" {
		t.Fatalf("delivery = %v, want sendMessage", call)
	}
	_ = sub.ws.CloseNow()
	res := bustest.Recv(t, "the publisher's answer after the subscriber left", done)
	if len(res.Acks) != 2 || res.Acks[0].ClientID != "leaver" || res.Acks[0].Processed || res.Acks[0].Error == "" {
		t.Fatalf("acks = %+v, want leaver not processed with an error, then later", res.Acks)
	}
	if !res.Acks[1].Processed {
		t.Errorf("the walk did not go on to later: %+v", res.Acks)
	}
}

func TestOversizeFrameClosesConnection(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{MaxFrameBytes: 1024})
	r := h.raw(t)
	r.init("big")
	r.send(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`)
	err := r.readErr()
	if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
		t.Errorf("after an oversize frame: read error %v (status %v), want close status %v", err, got, websocket.StatusMessageTooBig)
	}
	// A frame just under the limit is fine on a new connection.
	r2 := h.raw(t)
	r2.init("small")
	if got := r2.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", 900) + `"}}`); errCode(got) != 0 {
		t.Errorf("ping under the limit = %v, want a result", got)
	}
}

func TestReconnectResubscribes(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{MaxFrameBytes: 4096})
	ctx := context.Background()
	c := h.client(t, "sticky")
	rec := bustest.Processed()
	if err := c.Subscribe(ctx, "news:*", rec.Handle, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	// An oversize frame makes the server drop the connection.
	err := c.Call(ctx, "ping", map[string]string{"pad": strings.Repeat("x", 8192)}, nil)
	if err == nil {
		t.Fatalf("oversize call = nil error, want the connection lost")
	}
	bustest.WaitFor(t, "the client to reconnect", func() bool { return c.Connections() == 2 })
	res, err := h.client(t, "pub").SendMessage(ctx, "news:1", payload("x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Acks) != 1 || res.Acks[0].ClientID != "sticky" || !res.Acks[0].Processed {
		t.Errorf("after reconnect: acks %+v, want processed by sticky", res.Acks)
	}
	if _, err := c.Ping(ctx); err != nil {
		t.Errorf("Ping after reconnect = %v", err)
	}
}

func TestManyConnectionsNoLeak(t *testing.T) {
	const n = 1000
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	before := runtime.NumGoroutine()
	ctx := context.Background()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ws, _, err := websocket.Dial(ctx, h.url, nil)
			if err != nil {
				t.Errorf("dial #%d: %v", i, err)
				return
			}
			defer ws.CloseNow()
			frames := []string{
				fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientId":"c%d","clientInfo":{"name":"n","version":"1"}}}`, i),
				fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"topic":"conn:%d"}}`, i),
			}
			for _, f := range frames {
				if err := ws.Write(ctx, websocket.MessageText, []byte(f)); err != nil {
					t.Errorf("write: %v", err)
					return
				}
				if _, _, err := ws.Read(ctx); err != nil {
					t.Errorf("read: %v", err)
					return
				}
			}
			if i%2 == 0 {
				_ = ws.Close(websocket.StatusNormalClosure, "")
			}
		}()
	}
	wg.Wait()
	bustest.WaitFor(t, "all connections to be closed on the server", func() bool { return h.srv.Connections() == 0 })
	bustest.WaitFor(t, fmt.Sprintf("goroutines to return to about %d", before), func() bool {
		return runtime.NumGoroutine() <= before+5
	})
	res, err := h.bus.Request(ctx, bus.Message{Topic: "conn:7", Payload: payload("x")})
	if err != nil || res.Delivered != 0 {
		t.Errorf("Request to a dropped connection's topic = %+v, %v, want no subscriber left", res, err)
	}
}

func TestToken(t *testing.T) {
	b, err := bus.NewMemory(bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := jsonrpc.NewServer(b, jsonrpc.Options{Loopback: false}); err == nil {
		t.Errorf("NewServer(off loopback, no token) = nil error, want an error")
	}
	h := newHarness(t, bus.Options{}, jsonrpc.Options{Token: "s3cret"})
	ctx := context.Background()
	if c, err := jsonrpc.Dial(ctx, h.url, jsonrpc.ClientInfo{Name: "n", Version: "1"}, jsonrpc.WithToken("wrong")); err == nil {
		c.Close()
		t.Errorf("Dial with a wrong token = nil error, want unauthorized")
	} else if !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("Dial with a wrong token = %v, want an unauthorized error", err)
	}
	c, err := jsonrpc.Dial(ctx, h.url, jsonrpc.ClientInfo{Name: "n", Version: "1"}, jsonrpc.WithToken("s3cret"))
	if err != nil {
		t.Fatalf("Dial with the token = %v", err)
	}
	c.Close()
}

// A loopback peer without the token (bub's client sends none) keeps plain
// topics, but cannot subscribe to or send on the topics that steer a run:
// answering hook:tool.execute.before would let it rewrite a command.
func TestProtectedTopicsNeedToken(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{Token: "s3cret", TokenFile: "/run/weave/bus.token"})
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	guest := h.client(t, "guest") // no token
	ok := func(context.Context, bus.Message) (bus.Ack, error) { return bus.Ack{Processed: true}, nil }
	for _, pattern := range []string{"hook:tool.execute.before", "hook:", "agent:*", "system:dead-letter", "*", "h*", "[a-z]*", "?ook:x",
		// Escaped, they match the same topics (issue 23).
		`\hook:*`, `h\ook:*`, `\agent:*`, `\a\gent:tapestry`, `\system:*`, `\hook\:`, `[h]ook:*`} {
		err := guest.Subscribe(ctx, pattern, ok, jsonrpc.SubscribeOptions{})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeForbidden {
			t.Errorf("guest Subscribe(%q) = %v, want code %d", pattern, err, jsonrpc.CodeForbidden)
		} else if !strings.Contains(rpcErr.Message, "/run/weave/bus.token") {
			t.Errorf("guest Subscribe(%q) error %q does not say where the token is", pattern, rpcErr.Message)
		}
	}
	for _, topic := range []string{"hook:tool.execute.before", "agent:tapestry", "system:x"} {
		_, err := guest.SendMessage(ctx, topic, json.RawMessage(`{}`))
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeForbidden {
			t.Errorf("guest Send(%q) = %v, want code %d", topic, err, jsonrpc.CodeForbidden)
		}
	}
	// Plain topics work without the token.
	for _, pattern := range []string{"inbound:*", "outbound:", "hooks-report", "agentless:*"} {
		if err := guest.Subscribe(ctx, pattern, ok, jsonrpc.SubscribeOptions{}); err != nil {
			t.Errorf("guest Subscribe(%q) = %v, want success", pattern, err)
		}
	}
	if res, err := guest.SendMessage(ctx, "inbound:c1", json.RawMessage(`{"content":"hi"}`)); err != nil || res.Delivered != 1 {
		t.Errorf("guest Send(inbound:c1) = %+v, %v; want delivered to its own subscription", res, err)
	}
	// A peer with the token may answer hooks.
	member, err := jsonrpc.Dial(ctx, h.url, jsonrpc.ClientInfo{Name: "hooks", Version: "1"}, jsonrpc.WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	if err := member.Subscribe(ctx, "hook:*", ok, jsonrpc.SubscribeOptions{}); err != nil {
		t.Errorf("member Subscribe(hook:*) = %v", err)
	}
}

func TestListenAndServe(t *testing.T) {
	b, err := bus.NewMemory(bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Loopback claimed, but the address says otherwise.
	srv, err := jsonrpc.NewServer(b, jsonrpc.Options{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.ListenAndServe(ctx, "0.0.0.0:0"); err == nil {
		t.Errorf("ListenAndServe(0.0.0.0, no token) = nil, want an error")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	c, err := jsonrpc.Dial(ctx, "ws://"+ln.Addr().String(), jsonrpc.ClientInfo{Name: "n", Version: "1"}, jsonrpc.WithoutReconnect())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ping(ctx); err != nil {
		t.Errorf("Ping = %v", err)
	}
	cancel()
	if err := bustest.Recv(t, "Serve to return", done); err != nil {
		t.Errorf("Serve = %v, want nil after cancel", err)
	}
	if _, err := c.Ping(context.Background()); err == nil {
		t.Errorf("Ping after the server stopped = nil, want an error (no reconnect)")
	}
	c.Close()
}

// TestCallbacksOnTheSameConnection: a peer may be delivered its own
// message, and a handler may send on its own connection while it handles
// a delivery; neither waits for a timeout.
func TestCallbacksOnTheSameConnection(t *testing.T) {
	h := newHarness(t, bus.Options{RequestTimeout: time.Hour}, jsonrpc.Options{})
	ctx := context.Background()
	c := h.client(t, "loop")
	inner := bustest.Processed()
	if err := c.Subscribe(ctx, "inner:*", inner.Handle, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	err := c.Subscribe(ctx, "outer:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		res, err := c.SendMessage(ctx, "inner:1", payload("nested"))
		if err != nil {
			return bus.Ack{}, err
		}
		return bus.Ack{Processed: res.Success, Message: fmt.Sprintf("nested acks %d", len(res.Acks))}, nil
	}, jsonrpc.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan jsonrpc.SendResult, 1)
	go func() {
		res, err := c.SendMessage(ctx, "outer:1", payload("x"))
		if err != nil {
			t.Errorf("SendMessage: %v", err)
		}
		done <- res
	}()
	res := bustest.Recv(t, "the self-delivered message to be answered", done)
	want := []jsonrpc.AckInfo{{ClientID: "loop", Processed: true, Message: "nested acks 1"}}
	if diff := cmp.Diff(want, res.Acks); diff != "" {
		t.Errorf("acks (-want +got):\n%s", diff)
	}
	if inner.Len() != 1 {
		t.Errorf("inner handler called %d times, want 1", inner.Len())
	}
}

func TestIdempotencyKeyThroughFace(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	ctx := context.Background()
	rec := bustest.Processed()
	if err := h.client(t, "sub").Subscribe(ctx, "idem:*", rec.Handle, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	pub := h.client(t, "pub")
	params := map[string]any{"topic": "idem:1", "payload": payload("x"), "idempotencyKey": "k1"}
	var first, second jsonrpc.SendResult
	if err := pub.Call(ctx, "sendMessage", params, &first); err != nil {
		t.Fatal(err)
	}
	if err := pub.Call(ctx, "sendMessage", params, &second); err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !second.Duplicate || rec.Len() != 1 {
		t.Errorf("two sends with one key: duplicate %v then %v, delivered %d times; want false, true, once", first.Duplicate, second.Duplicate, rec.Len())
	}
}

func TestCloseSaysGoingAway(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	r := h.raw(t)
	r.init("c1")
	closed := make(chan error, 1)
	go func() { closed <- r.readErr() }()
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	err := bustest.Recv(t, "the connection to close", closed)
	if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
		t.Errorf("close status = %v (%v), want %v", got, err, websocket.StatusGoingAway)
	}
	if n := h.srv.Connections(); n != 0 {
		t.Errorf("Connections() after Close = %d, want 0", n)
	}
}

func TestSubscriberResultReachesThePublisher(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	ctx := context.Background()
	if err := h.client(t, "hook").Subscribe(ctx, "hook:x", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true, StopPropagation: true, Result: json.RawMessage(`{"action":"block","reason":"no"}`)}, nil
	}, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := h.client(t, "pub").SendMessage(ctx, "hook:x", payload("hook.event"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Acks) != 1 || string(res.Acks[0].Result) != `{"action":"block","reason":"no"}` {
		t.Errorf("SendMessage() acks = %+v, want the subscriber's result", res.Acks)
	}
}

// A page in a browser reaches a loopback bus through DNS rebinding (its own
// name resolved to 127.0.0.1) or a cross-site request: both are refused,
// while a plain client naming the address it dialled gets through.
func TestSameOriginRefusesOtherSites(t *testing.T) {
	b, err := bus.NewMemory(bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv, err := jsonrpc.NewServer(b, jsonrpc.Options{Loopback: true, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	dctx, dcancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer dcancel()
	for _, tt := range []struct {
		name, host, origin string
	}{
		{"rebound host", "attacker.example:" + port, ""},
		{"rebound host and origin", "attacker.example:" + port, "http://attacker.example:" + port},
		{"foreign origin", addr, "http://attacker.example"},
	} {
		hdr := http.Header{}
		if tt.origin != "" {
			hdr.Set("Origin", tt.origin)
		}
		hc := &http.Client{Transport: &http.Transport{}}
		ws, resp, err := websocket.Dial(dctx, "ws://"+addr, &websocket.DialOptions{HTTPHeader: hdr, Host: tt.host, HTTPClient: hc})
		if err == nil {
			ws.CloseNow()
			t.Errorf("%s: handshake accepted, want 403", tt.name)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: Dial = %v (response %v), want 403", tt.name, err, resp)
		}
	}
	c, err := jsonrpc.Dial(dctx, "ws://"+addr, jsonrpc.ClientInfo{Name: "n", Version: "1"})
	if err != nil {
		t.Fatalf("plain loopback client: %v", err)
	}
	c.Close()
}

// A batch counts each of its sendMessage requests against the connection's
// in-flight limit (Options.MaxInFlight, bus.max_in_flight): 5,000 in one
// frame to a subscriber that does not answer put 64 walks in flight by
// default, not 5,000, and 7 when the limit is 7.
func TestBatchRespectsInFlightLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   int
		limit int64
	}{{"default", 0, jsonrpc.DefaultMaxInFlight}, {"configured", 7, 7}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, bus.Options{RequestTimeout: time.Hour}, jsonrpc.Options{MaxInFlight: tc.opt})
			release := make(chan struct{})
			var inFlight, peak atomic.Int64
			_, err := h.bus.Subscribe(context.Background(), "sink:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				<-release
				inFlight.Add(-1)
				return bus.Ack{Processed: true}, nil
			}, bus.SubscribeOptions{Name: "silent"})
			if err != nil {
				t.Fatal(err)
			}
			r := h.raw(t)
			r.init("flooder")
			const n = 5000
			var b strings.Builder
			b.WriteByte('[')
			for i := range n {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"sendMessage","params":{"topic":"sink:x","payload":{}}}`, i)
			}
			b.WriteByte(']')
			r.send(b.String())
			bustest.WaitFor(t, "the limit's walks in flight", func() bool { return inFlight.Load() >= tc.limit })
			// Give a server without the limit the chance to start more.
			time.Sleep(100 * time.Millisecond)
			if p := peak.Load(); p > tc.limit {
				t.Errorf("a batch of %d put %d walks in flight, want at most %d", n, p, tc.limit)
			}
			close(release)
			resps, ok := r.recv().([]any)
			if !ok || len(resps) != n {
				t.Fatalf("batch answer has %d entries, want %d", len(resps), n)
			}
		})
	}
}

// The server's own caps hold whatever the number of peers: connections past
// MaxConnections are refused at the handshake, subscriptions past
// MaxTotalSubscriptions over all connections get CodeLimit naming the key,
// and closing a connection gives its share back.
func TestGlobalCaps(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{MaxConnections: 3, MaxTotalSubscriptions: 4, MaxSubscriptions: 3})
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	ok := func(context.Context, bus.Message) (bus.Ack, error) { return bus.Ack{Processed: true}, nil }
	a, b := h.client(t, "a"), h.client(t, "b")
	for i := range 3 {
		if err := a.Subscribe(ctx, fmt.Sprintf("a:%d", i), ok, jsonrpc.SubscribeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Subscribe(ctx, "b:0", ok, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	err := b.Subscribe(ctx, "b:1", ok, jsonrpc.SubscribeOptions{})
	if rpcCode(err) != jsonrpc.CodeLimit || !strings.Contains(err.Error(), "bus.max_total_subscriptions") {
		t.Errorf("fifth subscription over two connections = %v, want CodeLimit naming bus.max_total_subscriptions", err)
	}
	c := h.client(t, "c")
	if _, err := jsonrpc.Dial(ctx, h.url, jsonrpc.ClientInfo{Name: "d"}, jsonrpc.WithoutReconnect()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("fourth connection = %v, want refused with 503", err)
	}
	_ = c.Close()
	_ = a.Close()
	bustest.WaitFor(t, "the closed connections to go", func() bool { return h.srv.Connections() == 1 })
	if err := b.Subscribe(ctx, "b:1", ok, jsonrpc.SubscribeOptions{}); err != nil {
		t.Errorf("subscribe once a closed connection gave its share back = %v", err)
	}
}

// The topics the bus keeps (retained and append-only) are capped
// (bus.max_topics): a peer publishing on ever new ones gets an error naming
// the key instead of growing the bus without end.
func TestTopicCap(t *testing.T) {
	o := bus.DefaultOptions()
	o.MaxTopics = 3
	h := newHarness(t, o, jsonrpc.Options{})
	c := h.client(t, "writer")
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	for i := range 3 {
		if _, err := c.SendMessage(ctx, fmt.Sprintf("issue:%d", i), json.RawMessage(`{}`)); err != nil {
			t.Fatalf("append-only topic %d: %v", i, err)
		}
	}
	if _, err := c.SendMessage(ctx, "issue:0", json.RawMessage(`{}`)); err != nil {
		t.Errorf("a kept topic takes more messages: %v", err)
	}
	_, err := c.SendMessage(ctx, "issue:3", json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "bus.max_topics") {
		t.Errorf("a fourth kept topic = %v, want an error naming bus.max_topics", err)
	}
}

// Peers without the token share half of bus.max_total_subscriptions, so
// however many connections they open, the token holders (the host's hooks
// and agents) can still subscribe; a closed guest gives its share back.
func TestGuestSubscriptionShare(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{Token: "s3cret", MaxTotalSubscriptions: 8, MaxSubscriptions: 3})
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	ok := func(context.Context, bus.Message) (bus.Ack, error) { return bus.Ack{Processed: true}, nil }
	a, b := h.client(t, "guest-a"), h.client(t, "guest-b")
	for i := range 3 {
		if err := a.Subscribe(ctx, fmt.Sprintf("a:%d", i), ok, jsonrpc.SubscribeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Subscribe(ctx, "b:0", ok, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	err := b.Subscribe(ctx, "b:1", ok, jsonrpc.SubscribeOptions{})
	if rpcCode(err) != jsonrpc.CodeLimit || !strings.Contains(err.Error(), "without the bus token") || !strings.Contains(err.Error(), "bus.max_total_subscriptions") {
		t.Errorf("fifth guest subscription = %v, want CodeLimit naming the guests' share", err)
	}
	member, err := jsonrpc.Dial(ctx, h.url, jsonrpc.ClientInfo{Name: "hooks", Version: "1"}, jsonrpc.WithToken("s3cret"), jsonrpc.WithClientID("member"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for _, p := range []string{"hook:*", "agent:tapestry", "m:1"} {
		if err := member.Subscribe(ctx, p, ok, jsonrpc.SubscribeOptions{}); err != nil {
			t.Errorf("token holder Subscribe(%s) past the guests' share = %v, want success", p, err)
		}
	}
	_ = a.Close()
	bustest.WaitFor(t, "the closed guest to go", func() bool { return h.srv.Connections() == 2 })
	if err := b.Subscribe(ctx, "b:1", ok, jsonrpc.SubscribeOptions{}); err != nil {
		t.Errorf("guest subscribe once a closed guest gave its share back = %v", err)
	}
}
