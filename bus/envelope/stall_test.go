package envelope

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
)

// silentBroker is a broker on a memory bus whose session:* subscriber never
// answers: its queue (2) fills after a few events, and a publisher that
// waited for room would wait an hour.
func silentBroker(t testing.TB) (*Broker, *bus.Memory, chan struct{}) {
	t.Helper()
	o := bus.DefaultOptions()
	o.QueueSize, o.EnqueueTimeout, o.RequestTimeout = 2, time.Hour, time.Hour
	bb, err := bus.NewMemory(o)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	blocked := make(chan struct{}, 1)
	_, err = bb.Subscribe(context.Background(), "session:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		select {
		case blocked <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{Name: "silent"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), bb, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(release)
		b.Close()
		bb.Close()
	})
	return b, bb, blocked
}

// silentDeadLetters counts the deliveries to the silent subscriber that
// were dead-lettered because its queue was full.
func silentDeadLetters(t *testing.T, bb *bus.Memory) int {
	t.Helper()
	dls, err := bb.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, d := range dls {
		if d.Subscriber == "silent" && strings.Contains(d.Reason, "queue full") {
			full++
		}
	}
	return full
}

// Nor the socket face, whose connection marks its commands' context for
// publishing without waiting once, not per command.
func TestSilentSubscriberDoesNotStallSocket(t *testing.T) {
	b, bb, blocked := silentBroker(t)
	c := dial(t, serveUnix(t, b))
	for i := range 10 {
		r := cdo(t, c, mk(t, TypeSessionCreate, "owner", "", map[string]string{"name": "s"}))
		if err := r.Err(); err != nil {
			t.Fatalf("request %d while the subscriber is silent: %v", i, err)
		}
	}
	bustest.Recv(t, "the silent subscriber to hold a message", blocked)
	if silentDeadLetters(t, bb) == 0 {
		t.Error("no delivery to the silent subscriber was dead-lettered as queue full")
	}
}

// A subscriber on session:* that never answers must not slow the HTTP face:
// the coordinator publishes while it holds its lock, so a publish that
// waited for room in that subscriber's queue would hold every request.
func TestSilentSubscriberDoesNotStallHTTP(t *testing.T) {
	b, bb, blocked := silentBroker(t)
	srv := httpServer(t, b)
	client := &http.Client{Timeout: bustest.Deadline}
	for i := range 10 {
		resp, err := client.Post(srv.URL+"/api/sessions", "application/json", strings.NewReader(`{"name":"s"}`))
		if err != nil {
			t.Fatalf("request %d while the subscriber is silent: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("request %d = %d, want 201", i, resp.StatusCode)
		}
	}
	bustest.Recv(t, "the silent subscriber to hold a message", blocked)
	if silentDeadLetters(t, bb) == 0 {
		t.Error("no delivery to the silent subscriber was dead-lettered as queue full")
	}
}
