package jsonrpc_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// reportP50 records the median of the per-op durations as p50-ns.
func reportP50(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "p50-ns")
}

// benchServer serves a memory bus with a cooperative subscriber on bench:*
// over the JSON-RPC face, until b ends, and returns its URL.
func benchServer(b *testing.B) string {
	bb, err := bus.NewMemory(bus.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bb.Close() })
	if _, err := bb.Subscribe(context.Background(), "bench:*", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{Name: "local", Cooperative: true}); err != nil {
		b.Fatal(err)
	}
	srv, err := jsonrpc.NewServer(bb, jsonrpc.Options{Loopback: true})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	b.Cleanup(func() { srv.Close(); hs.Close() })
	return "ws" + strings.TrimPrefix(hs.URL, "http")
}

// BenchmarkSendMessage is a sendMessage round trip from a Go client to a
// cooperative subscriber in the bus process.
func BenchmarkSendMessage(b *testing.B) {
	ctx := context.Background()
	url := benchServer(b)
	c, err := jsonrpc.Dial(ctx, url, jsonrpc.ClientInfo{Name: "bench", Version: "1"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p := payload("bench", "text", "hello")
	durs := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		start := time.Now()
		if _, err := c.SendMessage(ctx, "bench:x", p); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	reportP50(b, durs)
}

// BenchmarkBareEcho is the floor: a frame of the same size echoed by a
// bare WebSocket server on the same library.
func BenchmarkBareEcho(b *testing.B) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			typ, data, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			if err := ws.Write(r.Context(), typ, data); err != nil {
				return
			}
		}
	}))
	defer hs.Close()
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.CloseNow()
	frame := []byte(`{"jsonrpc":"2.0","method":"sendMessage","params":{"topic":"bench:x","payload":{"type":"bench","text":"hello"}},"id":"c1"}`)
	durs := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		start := time.Now()
		if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ws.Read(ctx); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	reportP50(b, durs)
}

// BenchmarkSendMessageRawClient is the same round trip from a client that
// writes and reads raw frames: the server's share, without the Go client.
func BenchmarkSendMessageRawClient(b *testing.B) {
	ctx := context.Background()
	url := benchServer(b)
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.CloseNow()
	init := []byte(`{"jsonrpc":"2.0","method":"initialize","params":{"clientId":"bench","clientInfo":{"name":"bench","version":"1"}},"id":"i"}`)
	if err := ws.Write(ctx, websocket.MessageText, init); err != nil {
		b.Fatal(err)
	}
	if _, data, err := ws.Read(ctx); err != nil || !strings.Contains(string(data), `"result"`) {
		b.Fatalf("initialize answered %s, %v", data, err)
	}
	frame := []byte(`{"jsonrpc":"2.0","method":"sendMessage","params":{"topic":"bench:x","payload":{"type":"bench","text":"hello"}},"id":"c1"}`)
	durs := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		start := time.Now()
		if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
			b.Fatal(err)
		}
		_, data, err := ws.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		if !strings.Contains(string(data), `"result"`) {
			b.Fatalf("sendMessage answered %s", data)
		}
	}
	reportP50(b, durs)
}
