package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// serveBusBin runs the built `weave bus serve --ws 127.0.0.1:0` until the
// test ends and returns its WebSocket URL.
func serveBusBin(t *testing.T) string {
	t.Helper()
	// The server keeps its token where local commands and peers of this
	// test look for it.
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	out := &lines{ch: make(chan string, 16)}
	stop := startWatch(t, out, "--dir", t.TempDir(), "bus", "serve", "--ws", "127.0.0.1:0")
	t.Cleanup(stop)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line := <-out.ch:
			if f := strings.Fields(line); len(f) == 2 && f[0] == "ws" {
				return f[1]
			}
		case <-deadline:
			t.Fatal("weave bus serve printed no ws address")
		}
	}
}

func TestSendMessageExitsOneWhenTheReceiverAnswersWithAnError(t *testing.T) {
	url := serveBusBin(t)
	peer := dialPeer(t, url, "thread")
	err := peer.Subscribe(context.Background(), "agent:thread", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		if strings.Contains(string(m.Payload), "fine") {
			return bus.Ack{Processed: true, Result: json.RawMessage(`{"output":"all good","error":""}`)}, nil
		}
		return bus.Ack{Processed: true, Result: json.RawMessage(`{"output":"","error":"no model provider is configured"}`)}, nil
	}, jsonrpc.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, "", "send-message", "--bus", url, "--topic", "agent:thread", "--payload", `{"type":"agent.request","prompt":"hi"}`)
	if r.code != exitFailed || !strings.Contains(r.err, "thread answered with an error: no model provider is configured") {
		t.Errorf("send-message to a receiver answering an error = %d %q, want 1 saying so", r.code, r.err)
	}
	if !strings.Contains(r.out, `"processed": true`) {
		t.Errorf("send-message printed %q, want the result still", r.out)
	}
	if r := runBin(t, nil, "", "send-message", "--bus", url, "--topic", "agent:thread", "--payload", `{"type":"agent.request","prompt":"fine"}`); r.code != 0 {
		t.Errorf("send-message answered without error = %d %q, want 0", r.code, r.err)
	}
}

func TestDLQReplayExitsOneWhenDeadLetteredAgain(t *testing.T) {
	url := serveBusBin(t)
	peer := dialPeer(t, url, "broken")
	err := peer.Subscribe(context.Background(), "task:9", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		return bus.Ack{}, errors.New("database is down")
	}, jsonrpc.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := runBin(t, nil, "", "send-message", "--bus", url, "--topic", "task:9", "--payload", `{"type":"task_request"}`); r.code != exitFailed {
		t.Fatalf("send-message to a failing peer = %d, want 1", r.code)
	}
	var dls []bus.DeadLetter
	runJSON(t, &dls, "bus", "dlq", "--json", "--bus", url)
	if len(dls) != 1 {
		t.Fatalf("dead letters = %+v, want one", dls)
	}
	r := runBin(t, nil, "", "bus", "dlq", "replay", dls[0].ID, "--bus", url)
	if r.code != exitFailed || !strings.Contains(r.err, "dead letter again") {
		t.Errorf("bus dlq replay of a message that fails again = %d %q, want 1 saying it is a dead letter again", r.code, r.err)
	}
}

func TestStatusExitsOneOnABrokenConfigAndLeavesStateAlone(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	state := filepath.Join(dir, ".weave", "state.json")
	if err := os.WriteFile(state, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, "", "--dir", dir, "status")
	// Piped, the plans are on stdout and the warning on stderr, so the
	// tab-separated lines stay whole.
	if r.code != 0 || !strings.Contains(r.out, "ok") || !strings.Contains(r.err, "moves it aside") {
		t.Errorf("status with a corrupt state.json = %d %q %q, want 0, the plans and a warning", r.code, r.out, r.err)
	}
	if b, err := os.ReadFile(state); err != nil || string(b) != "{not json" {
		t.Errorf("status changed state.json: %q, %v", b, err)
	}
	if m, _ := filepath.Glob(state + ".corrupt-*"); len(m) != 0 {
		t.Errorf("status moved state.json aside: %v", m)
	}

	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("runbook:\n  retries: many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"status", "--json"}} {
		r := runBin(t, nil, "", append([]string{"--dir", dir}, args...)...)
		if r.code != exitFailed || !strings.Contains(r.err, "runbook.retries") || !strings.Contains(r.out, "ok") {
			t.Errorf("weave %v with a broken config = %d out %q err %q, want the status, then 1 naming the key", args, r.code, r.out, r.err)
		}
	}
}

func TestBusErrorsSayWhatToTry(t *testing.T) {
	r := runBin(t, nil, "", "send-message", "--bus", "ws://127.0.0.1:1", "--topic", "agent:x", "--payload", `{"type":"x"}`)
	want := "weave: no bus at ws://127.0.0.1:1: is `weave bus serve --ws 127.0.0.1:1` running? check --bus, bus.url or WEAVE_BUS_URL\n"
	if r.code != exitFailed || r.err != want {
		t.Errorf("send-message to a closed port = %d %q, want 1 and one line: %q", r.code, r.err, want)
	}
}
