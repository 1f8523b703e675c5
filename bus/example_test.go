package bus_test

import (
	"context"
	"fmt"

	"github.com/weavehq/weave/bus"
)

// An interceptor subscribed after a catch-all is called first and can stop
// the walk.
func Example() {
	ctx := context.Background()
	b, err := bus.NewMemory(bus.DefaultOptions())
	if err != nil {
		panic(err)
	}
	defer b.Close()

	b.Subscribe(ctx, "inbound:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true, Message: "handled"}, nil
	}, bus.SubscribeOptions{Name: "agent"})
	b.Subscribe(ctx, "inbound:chat-", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		if m.Headers["user"] == "" {
			return bus.Ack{StopPropagation: true, Message: "unauthenticated"}, nil
		}
		return bus.Ack{}, nil // let it through
	}, bus.SubscribeOptions{Name: "auth"})

	for _, user := range []string{"", "ada"} {
		res, err := b.Request(ctx, bus.Message{
			Topic:   "inbound:chat-1",
			Payload: []byte(`{"type":"plaintext_message","text":"hi"}`),
			Headers: map[string]string{"user": user},
		})
		if err != nil {
			panic(err)
		}
		for _, a := range res.Acks {
			fmt.Printf("%s: processed=%v %q\n", a.Subscriber, a.Processed, a.Message)
		}
		fmt.Println("stopped:", res.Stopped)
	}
	// Output:
	// auth: processed=false "unauthenticated"
	// stopped: true
	// auth: processed=false ""
	// agent: processed=true "handled"
	// stopped: true
}
