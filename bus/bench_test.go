package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
)

var benchSubs = []int{1, 100}

var benchPayload = json.RawMessage(`{"type":"task_updated","task":7}`)

// BenchmarkPublish measures publish→deliver on the memory backend: the
// clock stops when every subscriber has handled every message.
func BenchmarkPublish(b *testing.B) {
	for _, n := range benchSubs {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			mb, err := bus.NewMemory(bus.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer mb.Close()
			ctx := context.Background()
			var wg sync.WaitGroup
			wg.Add(n)
			target := b.N
			for i := range n {
				// Distinct patterns: an identical one would supersede the others.
				pattern := "bench:" + strings.Repeat("*", i+1)
				count := 0 // touched only by this subscription's worker
				_, err := mb.Subscribe(ctx, pattern, func(context.Context, bus.Message) (bus.Ack, error) {
					count++
					if count == target {
						wg.Done()
					}
					return bus.Ack{Processed: true}, nil
				}, bus.SubscribeOptions{Policy: bus.ContinueAll, Name: pattern})
				if err != nil {
					b.Fatal(err)
				}
			}
			m := bus.Message{Topic: "bench:x", Payload: benchPayload}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := mb.Publish(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkChannelFanout is the floor for BenchmarkPublish: the same
// message sent over bare buffered channels of the same size, one goroutine
// per subscriber.
func BenchmarkChannelFanout(b *testing.B) {
	for _, n := range benchSubs {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			var wg sync.WaitGroup
			wg.Add(n)
			target := b.N
			chans := make([]chan bus.Message, n)
			for i := range chans {
				ch := make(chan bus.Message, bus.DefaultQueueSize)
				chans[i] = ch
				go func() {
					count := 0
					for range ch {
						count++
						if count == target {
							wg.Done()
						}
					}
				}()
			}
			m := bus.Message{Topic: "bench:x", Payload: benchPayload}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for _, ch := range chans {
					ch <- m
				}
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			for _, ch := range chans {
				close(ch)
			}
		})
	}
}

// BenchmarkRequest measures the interceptor walk: one Request through subs
// handlers that do not stop it.
func BenchmarkRequest(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			mb, err := bus.NewMemory(bus.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer mb.Close()
			ctx := context.Background()
			for i := range n {
				pattern := "bench:" + strings.Repeat("*", i+1)
				_, err := mb.Subscribe(ctx, pattern, func(context.Context, bus.Message) (bus.Ack, error) {
					return bus.Ack{Processed: true}, nil
				}, bus.SubscribeOptions{Policy: bus.ContinueAll})
				if err != nil {
					b.Fatal(err)
				}
			}
			m := bus.Message{Topic: "bench:x", Payload: benchPayload}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := mb.Request(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStoreFlood appends to 40,000 append-only topics, as a peer that
// never forgets would, and reports the heap left after a collection beside
// the store's bound: what the bus holds stays under bus.max_store_bytes
// (plus the fixed cost of each topic) however long the flood goes on.
func BenchmarkStoreFlood(b *testing.B) {
	const bound = 64 << 20
	opts := bus.DefaultOptions()
	opts.MaxStoreBytes = bound
	opts.MaxTopics = 50_000
	mb, err := bus.NewMemory(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer mb.Close()
	ctx := context.Background()
	text := `"` + strings.Repeat("x", 4000) + `"`
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		// A payload of its own, as one read off a connection is.
		payload := json.RawMessage(text)
		if _, err := mb.Publish(ctx, bus.Message{Topic: fmt.Sprintf("issue:%d", i%40_000), Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse-min(before.HeapInuse, after.HeapInuse))/(1<<20), "heap-MiB")
	b.ReportMetric(float64(bound)/(1<<20), "bound-MiB")
}

// BenchmarkAppendFullLog appends to one append-only topic that is already
// at bus.max_log_messages (100,000 by default), where every append drops
// the oldest message: the cost of an append, and the longest one seen,
// must not depend on the log's length (no copy of the log, no array the
// size of the log allocated while publishers wait on the store's lock).
func BenchmarkAppendFullLog(b *testing.B) {
	mb, err := bus.NewMemory(bus.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer mb.Close()
	ctx := context.Background()
	m := bus.Message{Topic: "loop:trace", Payload: json.RawMessage(`{"type":"bench"}`)}
	for range bus.DefaultMaxLogMessages {
		if _, err := mb.Publish(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	var longest time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := mb.Publish(ctx, m); err != nil {
			b.Fatal(err)
		}
		longest = max(longest, time.Since(start))
	}
	b.ReportMetric(float64(longest.Microseconds()), "max-µs")
}
