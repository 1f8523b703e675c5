package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/model/modeltest"
)

// TestChatModelEventsStayOffTheSessionLog runs weave chat -p on a bus
// (weave bus serve) with a peer watching session:* and model:*: the
// model's deltas reach model:<session>, and session:<session>, the
// envelope faces' append-only log, gets none of them.
func TestChatModelEventsStayOffTheSessionLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	s := serveBus(t, "")
	ctx := context.Background()
	watcher := dialPeer(t, s.ws, "watcher")
	onSession := make(chan bus.Message, 64)
	onModel := make(chan bus.Message, 64)
	for pattern, ch := range map[string]chan bus.Message{"session:*": onSession, "model:*": onModel} {
		if err := watcher.Subscribe(ctx, pattern, func(_ context.Context, m bus.Message) (bus.Ack, error) {
			ch <- m
			return bus.Ack{Processed: true}, nil
		}, jsonrpc.SubscribeOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	srv := modeltest.NewServer(t, modeltest.Turn{Text: "hello from the model", Usage: &modeltest.Usage{Input: 10, Output: 4}})
	// The chat reads the token bus serve keeps, as a local peer does.
	env := append(chatEnv(t, srv), "XDG_RUNTIME_DIR="+os.Getenv("XDG_RUNTIME_DIR"))
	code, out, errOut := runWeave(t, bin, project(t, nil), env, "chat", "-p", "say hello", "--bus", s.ws)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// The events of the call, up to its model.usage, on model:<session>.
	var session string
	var deltas []string
	for done := false; !done; {
		m := bustest.Recv(t, "the chat's model events on model:*", onModel)
		var ev chat.Event
		if err := json.Unmarshal(m.Payload, &ev); err != nil {
			t.Fatalf("model:* got %s: %v", m.Payload, err)
		}
		if m.Topic != bus.ModelTopic(ev.Session) || ev.Session == "" {
			t.Errorf("event %s on %s, want it on %s", ev.Type, m.Topic, bus.ModelTopic(ev.Session))
		}
		session = ev.Session
		switch ev.Type {
		case chat.ModelDelta:
			deltas = append(deltas, ev.Text)
		case chat.ModelUsage:
			done = true
		}
	}
	if got := strings.Join(deltas, ""); got != "hello from the model" {
		t.Errorf("model.delta texts on model:* = %q, want the model's answer", got)
	}

	// A marker sent on session:<session> after the chat ended reaches the
	// watcher after anything the chat published there.
	if _, err := watcher.SendMessage(ctx, "session:"+session, map[string]string{"type": "test.marker"}); err != nil {
		t.Fatal(err)
	}
	for {
		m := bustest.Recv(t, "the marker on session:*", onSession)
		if strings.Contains(string(m.Payload), "test.marker") {
			break
		}
		if strings.Contains(string(m.Payload), `"model.`) {
			t.Errorf("session:* got a model event on %s: %s", m.Topic, m.Payload)
		}
	}
}

// TestChatOnABusDelegatesThere: with --bus, Loom's task goes over the bus
// to agent:thread, which the chat itself serves, as a run does; without
// that, the task would find no agent there and Loom would answer with
// Thread's turn.
func TestChatOnABusDelegatesThere(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	s := serveBus(t, "")
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "task", Args: `{"agent":"thread","prompt":"say what you see"}`}}},
		modeltest.Turn{Text: "Thread sees a project."},
		modeltest.Turn{Text: "Thread says it sees a project."},
	)
	env := append(chatEnv(t, srv), "XDG_RUNTIME_DIR="+os.Getenv("XDG_RUNTIME_DIR"))
	code, out, errOut := runWeave(t, bin, project(t, nil), env, "chat", "-p", "ask thread", "--bus", s.ws)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.HasSuffix(out, "Thread says it sees a project.\n") || len(srv.Requests()) != 3 {
		t.Errorf("stdout = %q after %d model requests, want Loom's answer after Thread's (3 requests)\nstderr: %s", out, len(srv.Requests()), errOut)
	}
}
