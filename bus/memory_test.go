package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
)

func TestMemoryConformance(t *testing.T) {
	bustest.Run(t, func(t *testing.T, opts bus.Options) bus.Bus {
		b, err := bus.NewMemory(opts)
		if err != nil {
			t.Fatalf("NewMemory: %v", err)
		}
		return b
	})
}

// TestMemoryCooperativeEnds checks the other ways a cooperative call ends:
// the requester cancelling, and the bus closing.
func TestMemoryCooperativeEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     func(cancel context.CancelFunc, b *bus.Memory)
		wantErr error
		wantAck string
	}{
		{"request cancelled", func(cancel context.CancelFunc, _ *bus.Memory) { cancel() }, context.Canceled, "request cancelled"},
		{"bus closed", func(_ context.CancelFunc, b *bus.Memory) { go b.Close() }, bus.ErrClosed, "bus closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bus.NewMemory(bus.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			entered := make(chan struct{})
			var cause error
			if _, err := b.Subscribe(context.Background(), "w:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
				close(entered)
				<-ctx.Done()
				cause = context.Cause(ctx)
				return bus.Ack{}, ctx.Err()
			}, bus.SubscribeOptions{Name: "waiter", Cooperative: true}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type out struct {
				res bus.Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := b.Request(ctx, bus.Message{Topic: "w:x", Payload: []byte(`{"type":"t"}`)})
				done <- out{res, err}
			}()
			bustest.Recv(t, "handler to be called", entered)
			tc.end(cancel, b)
			got := bustest.Recv(t, "Request to return", done)
			if !errors.Is(got.err, tc.wantErr) {
				t.Fatalf("Request error = %v, want %v", got.err, tc.wantErr)
			}
			if len(got.res.Acks) != 1 || !strings.Contains(got.res.Acks[0].Error, tc.wantAck) {
				t.Fatalf("acks = %+v, want one saying %q", got.res.Acks, tc.wantAck)
			}
			if tc.wantErr == bus.ErrClosed && cause != bus.ErrClosed {
				t.Errorf("handler's context cause = %v, want ErrClosed", cause)
			}
		})
	}
}

func TestNoWaitMarksACtxOnce(t *testing.T) {
	ctx := bus.NoWait(context.Background())
	if again := bus.NoWait(ctx); again != ctx {
		t.Errorf("NoWait of a marked ctx made a new one; a connection marking its ctx once would pay per publish")
	}
}

// TestMemoryListened: a topic is listened on while a subscriber's pattern
// matches it, and always when it is retained or append-only; not once that
// subscriber is gone, nor after Close.
func TestMemoryListened(t *testing.T) {
	opts := bus.DefaultOptions()
	opts.Retained = []string{"kept:*"}
	b, err := bus.NewMemory(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if b.Listened("hook:tool.execute.before") {
		t.Error("a topic no one subscribed to is listened on")
	}
	if !b.Listened("kept:state") {
		t.Error("a retained topic is not listened on")
	}
	sub, err := b.Subscribe(ctx, "hook:*", func(context.Context, bus.Message) (bus.Ack, error) { return bus.Ack{Processed: true}, nil }, bus.SubscribeOptions{Name: "peer"})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Listened("hook:tool.execute.before") {
		t.Error("a topic a subscriber's pattern matches is not listened on")
	}
	if b.Listened("other:x") {
		t.Error("a topic the pattern does not match is listened on")
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if b.Listened("hook:tool.execute.before") {
		t.Error("a topic is listened on after its one subscriber left")
	}
	_ = b.Close()
	if b.Listened("kept:state") {
		t.Error("a closed bus listens")
	}
}
