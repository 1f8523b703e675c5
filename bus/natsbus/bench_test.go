package natsbus_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
)

var benchPayload = json.RawMessage(`{"type":"bench","text":"hello"}`)

// BenchmarkPublishDeliver measures a publish from one bus to a subscriber
// on another bus on the same server (the cross-process path), one message
// in flight at a time.
func BenchmarkPublishDeliver(b *testing.B) {
	ns := bustest.StartNATS(b)
	pub := newBus(b, ns.URL(), bus.Options{})
	defer pub.Close()
	sub := newBus(b, ns.URL(), bus.Options{})
	defer sub.Close()
	got := make(chan struct{}, 1)
	ctx := context.Background()
	if _, err := sub.Subscribe(ctx, "bench:*", func(context.Context, bus.Message) (bus.Ack, error) {
		got <- struct{}{}
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{}); err != nil {
		b.Fatal(err)
	}
	m := bus.Message{Topic: "bench:x", Payload: benchPayload}
	b.ResetTimer()
	for b.Loop() {
		if _, err := pub.Publish(ctx, m); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}

// BenchmarkBareNATS is the floor: a nats.go publish to a subscription on
// another connection, one message in flight at a time.
func BenchmarkBareNATS(b *testing.B) {
	ns := bustest.StartNATS(b)
	pc, err := nats.Connect(ns.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	sc, err := nats.Connect(ns.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	got := make(chan struct{}, 1)
	if _, err := sc.Subscribe("bench.>", func(*nats.Msg) { got <- struct{}{} }); err != nil {
		b.Fatal(err)
	}
	if err := sc.Flush(); err != nil {
		b.Fatal(err)
	}
	data, _ := json.Marshal(bus.Message{Topic: "bench:x", Payload: benchPayload})
	b.ResetTimer()
	for b.Loop() {
		if err := pc.Publish("bench.x", data); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}

// BenchmarkLocalPublishDeliver is publish to a subscriber in the same
// process: NATS is only told, not waited for.
func BenchmarkLocalPublishDeliver(b *testing.B) {
	ns := bustest.StartNATS(b)
	bb := newBus(b, ns.URL(), bus.Options{})
	defer bb.Close()
	got := make(chan struct{}, 1)
	ctx := context.Background()
	if _, err := bb.Subscribe(ctx, "bench:*", func(context.Context, bus.Message) (bus.Ack, error) {
		got <- struct{}{}
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{}); err != nil {
		b.Fatal(err)
	}
	m := bus.Message{Topic: "bench:x", Payload: benchPayload}
	b.ResetTimer()
	for b.Loop() {
		if _, err := bb.Publish(ctx, m); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}

// BenchmarkRequestRemote is a Request answered by a subscriber in another
// bus process on the same server.
func BenchmarkRequestRemote(b *testing.B) {
	ns := bustest.StartNATS(b)
	pub := newBus(b, ns.URL(), bus.Options{})
	defer pub.Close()
	sub := newBus(b, ns.URL(), bus.Options{})
	defer sub.Close()
	ctx := context.Background()
	if _, err := sub.Subscribe(ctx, "bench:*", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{}); err != nil {
		b.Fatal(err)
	}
	m := bus.Message{Topic: "bench:x", Payload: benchPayload}
	for { // wait for the registry entry to reach pub
		res, err := pub.Request(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Acks) == 1 {
			break
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if res, err := pub.Request(ctx, m); err != nil || len(res.Acks) != 1 {
			b.Fatalf("Request = %+v, %v", res, err)
		}
	}
}
