package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	gorilla "github.com/gorilla/websocket"
	"github.com/sourcegraph/jsonrpc2"
	jsonrpc2ws "github.com/sourcegraph/jsonrpc2/websocket"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// An independent JSON-RPC 2.0 implementation (sourcegraph/jsonrpc2 over
// gorilla/websocket) speaks to the face as bub's peers do: nothing of
// ours on the client side.

func dialIndependent(t *testing.T, url string, h jsonrpc2.Handler) *jsonrpc2.Conn {
	t.Helper()
	ws, _, err := gorilla.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	if h == nil {
		h = jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no methods here"}
		})
	}
	c := jsonrpc2.NewConn(context.Background(), jsonrpc2ws.NewObjectStream(ws), h)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestIndependentClient(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()

	got := make(chan jsonrpc.Delivery, 1)
	sub := dialIndependent(t, h.url, jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		if r.Method != "sendMessage" || r.Params == nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: r.Method}
		}
		var d jsonrpc.Delivery
		if err := json.Unmarshal(*r.Params, &d); err != nil {
			return nil, err
		}
		got <- d
		return map[string]any{"success": true, "stopPropagation": false}, nil
	}))

	// Before initialize: -32001 "Not initialized".
	var e *jsonrpc2.Error
	err := sub.Call(ctx, "subscribe", map[string]string{"topic": "inbound:*"}, nil)
	if !errors.As(err, &e) || e.Code != -32001 || e.Message != "Not initialized" {
		t.Fatalf("subscribe before initialize = %v, want -32001 Not initialized", err)
	}

	var init struct {
		Capabilities struct {
			Topics *[]string `json:"topics"`
		} `json:"capabilities"`
	}
	if err := sub.Call(ctx, "initialize", map[string]any{"clientId": "telegram", "clientInfo": nil}, &init); err != nil {
		t.Fatalf("initialize with clientInfo null = %v", err)
	}
	if init.Capabilities.Topics == nil {
		t.Errorf("initialize result has no capabilities.topics")
	}
	for range 2 { // subscribing twice is idempotent
		var ok map[string]bool
		if err := sub.Call(ctx, "subscribe", map[string]string{"topic": "inbound:*"}, &ok); err != nil || !ok["success"] {
			t.Fatalf("subscribe = %v, %v", ok, err)
		}
	}

	pub := dialIndependent(t, h.url, nil)
	if err := pub.Call(ctx, "initialize", map[string]any{"clientId": "client-1"}, nil); err != nil {
		t.Fatal(err)
	}
	payload := json.RawMessage(`{"channel":"telegram","senderId":"u1","chatId":"c1","content":"msg1"}`)
	var res jsonrpc.SendResult
	if err := pub.Call(ctx, "sendMessage", map[string]any{"topic": "inbound:c1", "payload": payload}, &res); err != nil {
		t.Fatalf("sendMessage without payload.type = %v", err)
	}
	if !res.Success || res.Delivered != 1 || res.StopPropagation || len(res.Acks) != 1 || res.Acks[0].ClientID != "telegram" {
		t.Errorf("sendMessage result = %+v, want one ack from telegram and stopPropagation false", res)
	}
	d := bustest.Recv(t, "the delivery", got)
	var want, have any
	_ = json.Unmarshal(payload, &want)
	_ = json.Unmarshal(d.Payload, &have)
	if d.Topic != "inbound:c1" || !jsonEqual(want, have) {
		t.Errorf("delivery = %s %s, want inbound:c1 %s unchanged", d.Topic, d.Payload, payload)
	}

	// Unknown method and bad params, as the independent client reads them.
	if err := pub.Call(ctx, "teleport", map[string]any{}, nil); !errors.As(err, &e) || e.Code != jsonrpc2.CodeMethodNotFound {
		t.Errorf("unknown method = %v, want -32601", err)
	}
	if err := pub.Call(ctx, "sendMessage", map[string]any{"payload": payload}, nil); !errors.As(err, &e) || e.Code != jsonrpc2.CodeInvalidParams {
		t.Errorf("sendMessage without topic = %v, want -32602", err)
	}
	if err := pub.Call(ctx, "unsubscribe", map[string]any{"topic": "nope"}, nil); !errors.As(err, &e) || e.Code != -32004 {
		t.Errorf("unsubscribe unknown = %v, want -32004", err)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
