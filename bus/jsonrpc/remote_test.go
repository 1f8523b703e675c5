package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/bus/jsonrpc/jsonrpctest"
)

// adminBus serves a memory bus over WebSocket with the admin routes beside
// it, as `weave bus serve --ws` does.
func adminBus(t *testing.T, token string) (*bus.Memory, string) {
	t.Helper()
	s := jsonrpctest.Serve(t, token)
	return s.Bus, s.URL
}

func dialRemote(t *testing.T, url string, opts ...jsonrpc.DialOption) *jsonrpc.Remote {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	r, err := jsonrpc.DialRemote(ctx, url, jsonrpc.ClientInfo{Name: "remote", Version: "1"}, opts...)
	if err != nil {
		t.Fatalf("DialRemote(%s) = %v", url, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRemoteRequestAndSubscribe(t *testing.T) {
	b, url := adminBus(t, "")
	r := dialRemote(t, url, jsonrpc.WithClientID("remote-1"))
	ctx := context.Background()

	// A subscription made through the remote bus answers requests made on
	// the server's bus, and the other way round.
	got := make(chan bus.Message, 1)
	sub, err := r.Subscribe(ctx, "agent:r", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		got <- m
		return bus.Ack{Processed: true, StopPropagation: true, Message: "done"}, nil
	}, bus.SubscribeOptions{Policy: bus.StopOnStop})
	if err != nil {
		t.Fatalf("Subscribe = %v", err)
	}
	if sub.Pattern() != "agent:r" || sub.Name() != "remote-1" {
		t.Errorf("subscription = %s/%s, want agent:r/remote-1", sub.Pattern(), sub.Name())
	}
	if _, err := r.Subscribe(ctx, "agent:r", bustest.Processed().Handle, bus.SubscribeOptions{}); err == nil {
		t.Errorf("a second Subscribe(agent:r) on one connection = nil, want an error")
	}
	res, err := b.Request(ctx, bus.Message{Topic: "agent:r", Payload: json.RawMessage(`{"type":"t","n":1}`)})
	if err != nil || !res.Processed() {
		t.Fatalf("server Request = %+v, %v; want processed by the remote subscriber", res, err)
	}
	if m := bustest.Recv(t, "the delivery", got); !strings.Contains(string(m.Payload), `"n":1`) {
		t.Errorf("remote handler got %s", m.Payload)
	}

	if _, err := b.Subscribe(ctx, "agent:local", bustest.NewRecorder(bus.Ack{Processed: true, Message: "local"}).Handle, bus.SubscribeOptions{Name: "local"}); err != nil {
		t.Fatal(err)
	}
	res, err = r.Request(ctx, bus.Message{Topic: "agent:local", Payload: json.RawMessage(`{"type":"t"}`), IdempotencyKey: "k1"})
	if err != nil {
		t.Fatalf("remote Request = %v", err)
	}
	want := bus.Result{Delivered: 1, Acks: []bus.Ack{{Subscriber: "local", Processed: true, Message: "local"}}}
	if diff := cmp.Diff(want, res, cmpopts.IgnoreFields(bus.Result{}, "MessageID")); diff != "" {
		t.Errorf("remote Request (-want +got):\n%s", diff)
	}
	res, err = r.Request(ctx, bus.Message{Topic: "agent:local", Payload: json.RawMessage(`{"type":"t"}`), IdempotencyKey: "k1"})
	if err != nil || !res.Duplicate {
		t.Errorf("remote Request with the same idempotency key = %+v, %v; want a duplicate", res, err)
	}
	// A payload without type goes through.
	if _, err := r.Publish(ctx, bus.Message{Topic: "agent:local", Payload: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Errorf("remote Publish without type = %v, want nil", err)
	}

	if err := sub.Unsubscribe(); err != nil {
		t.Fatalf("Unsubscribe = %v", err)
	}
	if res, _ := b.Request(ctx, bus.Message{Topic: "agent:r", Payload: json.RawMessage(`{"type":"t"}`)}); res.Delivered != 0 {
		t.Errorf("after Unsubscribe, Request(agent:r) delivered %d, want 0", res.Delivered)
	}
}

func TestRemoteAdmin(t *testing.T) {
	b, url := adminBus(t, "tok")
	r := dialRemote(t, url, jsonrpc.WithToken("tok"))
	ctx := context.Background()

	if _, ok, err := r.Retained(ctx, "loop:current"); ok || err != nil {
		t.Errorf("Retained(empty) = %v, %v; want not found, no error", ok, err)
	}
	if _, err := r.Publish(ctx, bus.Message{Topic: "loop:current", Payload: json.RawMessage(`{"type":"loop.event","v":2}`)}); err != nil {
		t.Fatal(err)
	}
	m, ok, err := r.Retained(ctx, "loop:current")
	if err != nil || !ok || !strings.Contains(string(m.Payload), `"v":2`) {
		t.Errorf("Retained(loop:current) = %s, %v, %v; want the published payload", m.Payload, ok, err)
	}
	for i := range 3 {
		if _, err := r.Publish(ctx, bus.Message{Topic: "loop:anchor", Payload: json.RawMessage(`{"type":"a","i":` + string(rune('0'+i)) + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	var offsets []uint64
	if err := r.Replay(ctx, "loop:anchor", 2, func(off uint64, m bus.Message) bool { offsets = append(offsets, off); return true }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{2, 3}, offsets); diff != "" {
		t.Errorf("Replay(from 2) offsets (-want +got):\n%s", diff)
	}

	// A subscriber that fails leaves a dead letter, listed and replayed
	// through the admin routes.
	var recovered atomic.Bool
	if _, err := b.Subscribe(ctx, "task:x", func(context.Context, bus.Message) (bus.Ack, error) {
		if !recovered.Load() {
			return bus.Ack{}, errors.New("down")
		}
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{Name: "worker"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Request(ctx, bus.Message{Topic: "task:x", Payload: json.RawMessage(`{"type":"t"}`)}); err != nil {
		t.Fatal(err)
	}
	dls, err := r.DeadLetters(ctx)
	if err != nil || len(dls) != 1 || dls[0].Subscriber != "worker" {
		t.Fatalf("DeadLetters = %+v, %v; want the worker's", dls, err)
	}
	recovered.Store(true)
	res, err := r.ReplayDeadLetter(ctx, dls[0].ID)
	if err != nil || !res.Processed() {
		t.Errorf("ReplayDeadLetter = %+v, %v; want processed", res, err)
	}
	if _, err := r.ReplayDeadLetter(ctx, dls[0].ID); !errors.Is(err, bus.ErrNotFound) {
		t.Errorf("ReplayDeadLetter(again) = %v, want ErrNotFound", err)
	}

	// Without the token the admin routes refuse.
	resp, err := http.Get(strings.Replace(url, "ws://", "http://", 1) + jsonrpc.AdminDeadLettersPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET dead letters without token = %d, want 401", resp.StatusCode)
	}
}

func TestRemoteWithoutAdmin(t *testing.T) {
	h := newHarness(t, bus.DefaultOptions(), jsonrpc.Options{}) // the WebSocket face alone
	r := dialRemote(t, h.url)
	ctx := context.Background()
	if _, _, err := r.Retained(ctx, "loop:current"); !errors.Is(err, jsonrpc.ErrRemoteUnsupported) {
		t.Errorf("Retained on a server without admin routes = %v, want ErrRemoteUnsupported", err)
	}
	if _, err := r.DeadLetters(ctx); !errors.Is(err, jsonrpc.ErrRemoteUnsupported) {
		t.Errorf("DeadLetters on a server without admin routes = %v, want ErrRemoteUnsupported", err)
	}
}

func TestDialRemoteBadURL(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:1", "nats://x:1", "ws://", "::"} {
		if _, err := jsonrpc.DialRemote(context.Background(), u, jsonrpc.ClientInfo{Name: "r", Version: "1"}); err == nil || !strings.Contains(err.Error(), "ws://") {
			t.Errorf("DialRemote(%q) = %v, want an error asking for ws://", u, err)
		}
	}
}
