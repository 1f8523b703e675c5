package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
)

func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestFakeClock(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := NewFakeClock(start)
	short, long := c.After(time.Second), c.After(time.Minute)
	if now := c.After(0); !fired(now) {
		t.Errorf("After(0) did not fire at once")
	}
	if diff := cmp.Diff([]time.Duration{time.Second, time.Minute}, c.Pending()); diff != "" {
		t.Errorf("Pending() (-want +got):\n%s", diff)
	}
	c.Advance(999 * time.Millisecond)
	if fired(short) || fired(long) {
		t.Fatalf("timers fired before they were due")
	}
	c.Advance(time.Millisecond)
	if !fired(short) || fired(long) {
		t.Errorf("after 1s: short fired = false or long fired = true, want only short")
	}
	if got := c.Now(); !got.Equal(start.Add(time.Second)) {
		t.Errorf("Now() = %v, want %v", got, start.Add(time.Second))
	}
	c.Advance(time.Hour)
	if !fired(long) {
		t.Errorf("long timer did not fire after an hour")
	}
	if n := len(c.Pending()); n != 0 {
		t.Errorf("Pending() has %d timers after all fired, want 0", n)
	}
}

func TestWaitForTimer(t *testing.T) {
	c := NewFakeClock(time.Unix(0, 0))
	done := make(chan struct{})
	go func() {
		<-c.After(3 * time.Second)
		close(done)
	}()
	c.WaitForTimer(t, 3*time.Second)
	c.Advance(3 * time.Second)
	Recv(t, "the timer goroutine", done)
}

func TestRecorder(t *testing.T) {
	r := NewRecorder(bus.Ack{Processed: true, Message: "ok"})
	go func() {
		for i := range 3 {
			r.Handle(context.Background(), bus.Message{ID: string(rune('a' + i))})
		}
	}()
	got := r.WaitN(t, 3)
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, ids); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	ack, _ := r.Handle(context.Background(), bus.Message{})
	if !ack.Processed || ack.Message != "ok" {
		t.Errorf("Handle() ack = %+v, want the fixed ack", ack)
	}
	if r.Len() != 4 {
		t.Errorf("Len() = %d, want 4", r.Len())
	}
}
