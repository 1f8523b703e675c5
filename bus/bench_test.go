package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

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
