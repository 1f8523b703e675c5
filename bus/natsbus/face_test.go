package natsbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// On a NATS bus, a token-less peer of one bus process cannot subscribe to
// the protected topics however it spells the pattern (issue 23), so a hook
// request sent through another process reaches only the token holder.
func TestJSONRPCFaceGuestCannotSpellItsWayToProtectedTopics(t *testing.T) {
	ns := bustest.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	urls := make([]string, 2)
	for i := range urls {
		b := newBus(t, ns.URL(), bus.Options{})
		t.Cleanup(func() { _ = b.Close() })
		srv, err := jsonrpc.NewServer(b, jsonrpc.Options{Loopback: true, Token: "s3cret"})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { _ = srv.Close(); hs.Close() })
		urls[i] = "ws" + strings.TrimPrefix(hs.URL, "http")
	}
	dial := func(url, id string, opts ...jsonrpc.DialOption) *jsonrpc.Client {
		c, err := jsonrpc.Dial(ctx, url, jsonrpc.ClientInfo{Name: "t", Version: "1"}, append(opts, jsonrpc.WithClientID(id))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	guest := dial(urls[0], "guest")
	var asked atomic.Int32
	modify := func(context.Context, bus.Message) (bus.Ack, error) {
		asked.Add(1)
		return bus.Ack{Processed: true, Result: json.RawMessage(`{"action":"modify"}`)}, nil
	}
	for _, pattern := range bustest.ProtectedSpellings {
		err := guest.Subscribe(ctx, pattern, modify, jsonrpc.SubscribeOptions{Policy: bus.ContinueAll})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeForbidden {
			t.Errorf("token-less Subscribe(%q) = %v, want code %d (forbidden)", pattern, err, jsonrpc.CodeForbidden)
		}
	}
	if err := guest.Subscribe(ctx, `\*`, modify, jsonrpc.SubscribeOptions{Policy: bus.ContinueAll}); err != nil {
		t.Errorf(`token-less Subscribe(\*) = %v, want success: it matches only "*"`, err)
	}
	member := dial(urls[0], "member", jsonrpc.WithToken("s3cret"))
	if err := member.Subscribe(ctx, "hook:*", bustest.NewRecorder(bus.Ack{Processed: true}).Handle, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	host := dial(urls[1], "host", jsonrpc.WithToken("s3cret"))
	var res jsonrpc.SendResult
	bustest.WaitFor(t, "the token holder to answer the hook from the other process", func() bool {
		var err error
		res, err = host.SendMessage(ctx, "hook:tool.execute.before", payload())
		return err == nil && len(res.Acks) > 0
	})
	if len(res.Acks) != 1 || res.Acks[0].ClientID != "member" {
		t.Errorf("acks = %+v, want the token holder's alone", res.Acks)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the token-less peer was asked %d times, want never", n)
	}
}
