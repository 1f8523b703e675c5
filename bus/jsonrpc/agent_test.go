package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// lockedBuffer collects agent output for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestDefaultHandlerStartsAgent: a message on a topic nobody is subscribed
// to starts the agent command (this test binary, re-executed as an agent),
// which subscribes to the topic and gets the message.
func TestDefaultHandlerStartsAgent(t *testing.T) {
	workspace := t.TempDir()
	out := &lockedBuffer{}
	var h *harness
	opts := jsonrpc.Options{
		AgentCommand:      []string{os.Args[0]},
		AgentEnv:          []string{"WEAVE_TEST_AGENT=1"},
		Workspace:         workspace,
		AgentStartTimeout: 30 * time.Second,
		AgentOutput:       out,
	}
	h = newHarnessWith(t, bus.Options{}, opts, func(url string, o *jsonrpc.Options) { o.BusURL = url })
	ctx := context.Background()
	bridge := h.client(t, "tg-bridge")

	// Several messages at once on the same topic start one agent.
	const n = 3
	type sent struct {
		res jsonrpc.SendResult
		err error
	}
	results := make(chan sent, n) // the senders never touch t: the loop below may end the test first
	for range n {
		go func() {
			res, err := bridge.SendMessage(ctx, "tg:123456789", payload("telegram_message", "text", "hello"))
			results <- sent{res, err}
		}()
	}
	agents := map[string]bool{}
	pid := 0
	for range n {
		var res jsonrpc.SendResult
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("SendMessage: %v; agent output:\n%s", r.err, out)
			}
			res = r.res
		case <-time.After(time.Minute):
			t.Fatalf("no answer from the default handler; agent output:\n%s", out)
		}
		if !res.Success || len(res.Acks) != 1 || !res.Acks[0].Processed {
			t.Fatalf("SendMessage = %+v, want processed by the started agent; agent output:\n%s", res, out)
		}
		ack := res.Acks[0]
		agents[ack.ClientID] = true
		var env map[string]string
		if err := json.Unmarshal([]byte(ack.Message), &env); err != nil {
			t.Fatalf("agent reply %q: %v", ack.Message, err)
		}
		pid, _ = strconv.Atoi(env["PID"])
		delete(env, "PID")
		want := map[string]string{
			"WEAVE_WORKSPACE": workspace, "BUB_WORKSPACE": workspace,
			"WEAVE_DEFAULT_TOPIC": "tg:123456789", "BUB_DEFAULT_TOPIC": "tg:123456789",
			"WEAVE_AGENT_ID": ack.ClientID, "BUB_AGENT_ID": ack.ClientID,
			"WEAVE_BUS_URL": h.url, "BUB_BUS_URL": h.url,
			"PWD": workspace,
		}
		if diff := cmp.Diff(want, env); diff != "" {
			t.Errorf("agent environment (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(ack.ClientID, "agent-") {
			t.Errorf("agent id = %q, want an agent- id", ack.ClientID)
		}
	}
	if len(agents) != 1 {
		t.Errorf("agents started = %v, want one for the topic", agents)
	}
	// The agent stays subscribed: the next message goes straight to it.
	res, err := bridge.SendMessage(ctx, "tg:123456789", payload("telegram_message", "text", "again"))
	if err != nil || len(res.Acks) != 1 || !agents[res.Acks[0].ClientID] {
		t.Errorf("second SendMessage = %+v, %v, want the same agent", res, err)
	}
	// Close stops the agents the server started.
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("agent process %d after Close: kill(0) = %v, want ESRCH (gone)", pid, err)
	}
}

func TestDefaultHandlerAgentFails(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		want    string
	}{
		{"missing command", []string{"/nonexistent/agent"}, "start agent"},
		{"exits without subscribing", []string{"/bin/sh", "-c", "exit 3"}, "exited before subscribing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, bus.Options{}, jsonrpc.Options{AgentCommand: tt.command, AgentStartTimeout: 30 * time.Second})
			_, err := h.client(t, "pub").SendMessage(context.Background(), "tg:1", payload("x"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SendMessage = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// System topics and model events never start an agent.
	h := newHarness(t, bus.Options{}, jsonrpc.Options{AgentCommand: []string{"/nonexistent/agent"}})
	for _, topic := range []string{"system:agent.spawned", "model:s1"} {
		res, err := h.client(t, "pub").SendMessage(context.Background(), topic, payload("agent_event"))
		if err != nil || res.Success {
			t.Errorf("SendMessage(%s) = %+v, %v, want no subscriber and no error", topic, res, err)
		}
	}
}
