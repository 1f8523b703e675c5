package natsbus_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// TestJSONRPCFaceAcrossProcesses: two bus processes on one NATS server,
// each with its WebSocket face; a peer on one answers a peer on the other.
func TestJSONRPCFaceAcrossProcesses(t *testing.T) {
	ns := bustest.StartNATS(t)
	ctx := context.Background()
	urls := make([]string, 2)
	for i := range urls {
		b := newBus(t, ns.URL(), bus.Options{})
		t.Cleanup(func() { _ = b.Close() })
		srv, err := jsonrpc.NewServer(b, jsonrpc.Options{Loopback: true})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { _ = srv.Close(); hs.Close() })
		urls[i] = "ws" + strings.TrimPrefix(hs.URL, "http")
	}
	dial := func(url, id string) *jsonrpc.Client {
		c, err := jsonrpc.Dial(ctx, url, jsonrpc.ClientInfo{Name: "t", Version: "1"}, jsonrpc.WithClientID(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	agent := dial(urls[0], "agent-far")
	rec := bustest.NewRecorder(bus.Ack{Processed: true, Message: "done"})
	if err := agent.Subscribe(ctx, "agent:far", rec.Handle, jsonrpc.SubscribeOptions{Method: "processMessage"}); err != nil {
		t.Fatal(err)
	}
	pub := dial(urls[1], "pub")
	var res jsonrpc.SendResult
	bustest.WaitFor(t, "the far agent to answer", func() bool {
		var err error
		res, err = pub.SendMessage(ctx, "agent:far", payload())
		return err == nil && len(res.Acks) == 1
	})
	if a := res.Acks[0]; a.ClientID != "agent-far" || !a.Processed || a.Message != "done" {
		t.Errorf("ack = %+v, want processed by agent-far", a)
	}
}
