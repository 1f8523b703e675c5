package busface

import (
	"context"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/plugins"
)

// benchHookRun runs tool.execute.before through the bus hooks of b.
func benchHookRun(b *testing.B, busb bus.Bus) {
	p := busPipeline(b, busb)
	ev := toolEvent("ls")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out, err := p.Run(ctx, ev)
		if err != nil || out.Action == plugins.Block {
			b.Fatalf("Run = %v, %v", out.Action, err)
		}
	}
}

// BenchmarkBusHookNoPeer is what every hook event costs when nobody on the
// bus acts as a hook.
func BenchmarkBusHookNoPeer(b *testing.B) {
	m, _ := bus.NewMemory(bus.DefaultOptions())
	defer m.Close()
	benchHookRun(b, m)
}

// BenchmarkBusHookLocalPeer has one in-process subscriber answer.
func BenchmarkBusHookLocalPeer(b *testing.B) {
	m, _ := bus.NewMemory(bus.DefaultOptions())
	defer m.Close()
	if _, err := m.Subscribe(context.Background(), "hook:tool.execute.before", answer(`{"action":"allow"}`, true), bus.SubscribeOptions{}); err != nil {
		b.Fatal(err)
	}
	benchHookRun(b, m)
}

// BenchmarkBusHookWebSocketPeer has a peer on the JSON-RPC face answer: a
// WebSocket round trip per event.
func BenchmarkBusHookWebSocketPeer(b *testing.B) {
	ws := startWSBus(b, "")
	c, err := jsonrpc.Dial(context.Background(), ws.url, jsonrpc.ClientInfo{Name: "bench", Version: "1"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(context.Background(), "hook:tool.execute.before", answer(`{"action":"allow"}`, true), jsonrpc.SubscribeOptions{}); err != nil {
		b.Fatal(err)
	}
	benchHookRun(b, ws.bus)
}
