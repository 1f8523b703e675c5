package collab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/collab"
)

func ExampleCollaborator_RequestReply() {
	ctx := context.Background()
	b, err := bus.NewMemory(bus.Options{})
	if err != nil {
		panic(err)
	}
	defer b.Close()

	coordinator, _ := collab.New(ctx, b, "coordinator", collab.Options{})
	expert, _ := collab.New(ctx, b, "expert", collab.Options{})
	b.Subscribe(ctx, "agent:expert", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		req, err := collab.Decode(m)
		if err != nil {
			return bus.Ack{}, err
		}
		_, err = expert.Reply(ctx, req, json.RawMessage(`{"answer":42}`))
		return bus.Ack{Processed: err == nil}, err
	}, bus.SubscribeOptions{Name: "expert"})

	reply, ok, err := coordinator.RequestReply(ctx, "agent:expert", json.RawMessage(`{"question":"?"}`), 5*time.Second)
	if err != nil || !ok {
		panic(fmt.Sprint("no reply: ", err))
	}
	fmt.Println(reply.Type, reply.Source, string(reply.Payload))
	// Output: collab.reply agent.expert {"answer":42}
}
