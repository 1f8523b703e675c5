//go:build torture

package jsonrpc_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// rss is the process's resident set in MiB, from /proc (0 elsewhere).
func rss() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}

func heapMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// pingLatency times a round trip of a normal peer's ping.
func pingLatency(t *testing.T, c *jsonrpc.Client) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	start := time.Now()
	if _, err := c.SendMessage(ctx, "probe:x", map[string]any{"type": "probe"}); err != nil {
		t.Fatalf("a normal request during the flood: %v", err)
	}
	return time.Since(start)
}

// TestTortureBatchFlood sends 40 frames of 5,000 sendMessage to a
// subscriber that never answers and prints memory and a normal request's
// latency beside the idle figures (before the in-flight limit counted batch
// elements: 21 MB -> 3.96 GB in 5 s).
func TestTortureBatchFlood(t *testing.T) {
	h := newHarness(t, bus.Options{RequestTimeout: time.Hour}, jsonrpc.Options{})
	ok := func(context.Context, bus.Message) (bus.Ack, error) { return bus.Ack{Processed: true}, nil }
	normal := h.client(t, "normal")
	if err := normal.Subscribe(context.Background(), "probe:*", ok, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	idle := pingLatency(t, normal)
	heap0, rss0 := heapMiB(), rss()
	silent := h.raw(t)
	silent.init("silent")
	silent.roundTrip(`{"jsonrpc":"2.0","id":"s","method":"subscribe","params":{"topic":"sink:*"}}`)
	flood := h.raw(t)
	flood.init("flooder")
	var b strings.Builder
	b.WriteByte('[')
	for i := range 5000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"sendMessage","params":{"topic":"sink:x","payload":{"n":%d}}}`, i, i)
	}
	b.WriteByte(']')
	frame := b.String()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for range 40 {
			if err := flood.ws.Write(ctx, 1, []byte(frame)); err != nil {
				return // the server stopped reading: the limit holds
			}
		}
	}()
	time.Sleep(5 * time.Second)
	during := pingLatency(t, normal)
	heap1, rss1 := heapMiB(), rss()
	<-sent
	t.Logf("torture batch flood: heap %.1f -> %.1f MiB, RSS %.1f -> %.1f MiB; normal request %v idle, %v during", heap0, heap1, rss0, rss1, idle, during)
	if heap1-heap0 > 256 {
		t.Errorf("the batch flood grew the heap by %.0f MiB", heap1-heap0)
	}
}

// TestTortureSubscriptionFlood opens 200 connections of 256 subscriptions
// each and prints memory while they are open and once they closed (before:
// 7.5 GB, 10.9 GB after closing). bus.max_total_subscriptions stops it at
// 16,384.
func TestTortureSubscriptionFlood(t *testing.T) {
	h := newHarness(t, bus.Options{QueueSize: 1024}, jsonrpc.Options{})
	ok := func(context.Context, bus.Message) (bus.Ack, error) { return bus.Ack{Processed: true}, nil }
	heap0, rss0 := heapMiB(), rss()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var clients []*jsonrpc.Client
	refused := 0
	for i := range 200 {
		c, err := jsonrpc.Dial(ctx, h.url, jsonrpc.ClientInfo{Name: "flood"}, jsonrpc.WithClientID(fmt.Sprintf("c%d", i)), jsonrpc.WithoutReconnect())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		for j := range 256 {
			if err := c.Subscribe(ctx, fmt.Sprintf("flood:%d:%d", i, j), ok, jsonrpc.SubscribeOptions{}); err != nil {
				refused++
			}
		}
	}
	heap1, rss1 := heapMiB(), rss()
	for _, c := range clients {
		_ = c.Close()
	}
	bustest.WaitFor(t, "the connections to close", func() bool { return h.srv.Connections() == 0 })
	heap2, rss2 := heapMiB(), rss()
	t.Logf("torture subscription flood: %d subscriptions refused at the cap; heap %.1f -> %.1f -> %.1f MiB after closing, RSS %.1f -> %.1f -> %.1f MiB",
		refused, heap0, heap1, heap2, rss0, rss1, rss2)
	if heap2-heap0 > 32 {
		t.Errorf("closing every connection left %.0f MiB on the heap", heap2-heap0)
	}
}
