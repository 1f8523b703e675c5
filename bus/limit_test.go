package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus"
)

// A publish refused by the bus's own caps is a bus.ErrLimit whose text
// names the key, so the faces answer it as a limit and not as a failure.
func TestLimitErrors(t *testing.T) {
	o := bus.DefaultOptions()
	o.MaxTopics = 1
	b, err := bus.NewMemory(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Publish(ctx, bus.Message{Topic: "issue:1", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	_, err = b.Publish(ctx, bus.Message{Topic: "issue:2", Payload: []byte(`{}`)})
	if !errors.Is(err, bus.ErrLimit) || !strings.Contains(err.Error(), "bus.max_topics") {
		t.Errorf("Publish past bus.max_topics = %v, want a bus.ErrLimit naming the key", err)
	}
	if _, err := b.Publish(ctx, bus.Message{Topic: "inbound:x", Payload: []byte(`{}`)}); err != nil {
		t.Errorf("Publish on a plain topic of a full bus = %v, want success", err)
	}
}

func TestOptionsKeeps(t *testing.T) {
	o := bus.DefaultOptions()
	for topic, want := range map[string]bool{
		"issue:1": true, "loop:current": true, "session:s1": true, "session-index": true,
		"inbound:x": false, "hook:x": false, "loop:other": false, "model:s1": false,
	} {
		if got := o.Keeps(topic); got != want {
			t.Errorf("DefaultOptions().Keeps(%q) = %v, want %v", topic, got, want)
		}
	}
	if (bus.Options{}).Keeps("issue:1") {
		t.Errorf("Options{}.Keeps(issue:1) = true, want false: nothing is kept without patterns")
	}
}
