package collab

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.UnixMilli(1_700_000_000_123)

func TestNewEnvelope(t *testing.T) {
	tests := []struct {
		name string
		got  Envelope
		want Envelope
	}{
		{"thread reply", NewEnvelope("task-42", "agent.coordinator", t0), Envelope{
			ThreadID: "task-42", CorrelationID: "task-42", Sender: "agent.coordinator",
			ReplyTo: "thread.task-42.reply", TTL: 16, TS: 1_700_000_000_123,
		}},
		{"agent reply", WithAgentReply("task-1", "agent.coordinator", "coordinator", t0), Envelope{
			ThreadID: "task-1", CorrelationID: "task-1", Sender: "agent.coordinator",
			ReplyTo: "agent.coordinator.replies", TTL: 16, TS: 1_700_000_000_123,
		}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestNextHop(t *testing.T) {
	e := NewEnvelope("t", "agent.a", t0)
	for i := 1; i <= 15; i++ {
		if !e.NextHop() {
			t.Fatalf("NextHop() #%d = false, want true (ttl %d)", i, e.TTL)
		}
	}
	if e.NextHop() {
		t.Errorf("NextHop() #16 = true, want false: the budget of 16 is spent")
	}
	if e.TTL != 0 || e.Hop != 16 {
		t.Errorf("after 16 hops TTL, Hop = %d, %d, want 0, 16", e.TTL, e.Hop)
	}
	if e.NextHop() || e.TTL != 0 || e.Hop != 17 {
		t.Errorf("NextHop() past the budget: TTL %d, Hop %d, want false with TTL 0, Hop 17", e.TTL, e.Hop)
	}
	one := Envelope{TTL: 1}
	if one.NextHop() {
		t.Errorf("NextHop() with TTL 1 = true, want false")
	}
}

func TestFromMetadata(t *testing.T) {
	tests := []struct {
		name string
		md   map[string]string
		want Envelope
	}{
		{"full", map[string]string{
			"thread_id": "th", "correlation_id": "co", "sender": "agent.x", "reply_to": "agent.x.replies",
			"ttl": "3", "hop": "2", "ts": "42",
		}, Envelope{ThreadID: "th", CorrelationID: "co", Sender: "agent.x", ReplyTo: "agent.x.replies", TTL: 3, Hop: 2, TS: 42}},
		{"empty falls back", map[string]string{}, Envelope{
			ThreadID: "evt-1", CorrelationID: "evt-1", ReplyTo: "thread.evt-1.reply", TTL: 16, TS: t0.UnixMilli(),
		}},
		{"malformed numbers fall back", map[string]string{"thread_id": "th", "ttl": "x", "hop": "-3", "ts": "soon"}, Envelope{
			ThreadID: "th", CorrelationID: "th", ReplyTo: "thread.th.reply", TTL: 16, TS: t0.UnixMilli(),
		}},
	}
	for _, tt := range tests {
		got := FromMetadata(tt.md, "evt-1", t0)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("FromMetadata(%s) (-want +got):\n%s", tt.name, diff)
		}
	}
	e := Envelope{ThreadID: "th", CorrelationID: "co", Sender: "s", ReplyTo: "r", TTL: 5, Hop: 11, TS: 99}
	if diff := cmp.Diff(e, FromMetadata(e.Metadata(), "other", t0)); diff != "" {
		t.Errorf("FromMetadata(Metadata()) round trip (-want +got):\n%s", diff)
	}
}

func TestTopics(t *testing.T) {
	e := NewEnvelope("collab-1", "agent.worker-1", t0)
	tests := []struct{ name, got, want string }{
		{"BroadcastTopic", e.BroadcastTopic(), "thread.collab-1.broadcast"},
		{"ReplyTopic", e.ReplyTopic(), "thread.collab-1.reply"},
		{"AgentReplyTopic", AgentReplyTopic("worker-1"), "agent.worker-1.replies"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	senders := []struct {
		sender, want string
		ok           bool
	}{
		{"agent.worker-1", "agent.worker-1.replies", true},
		{"broker:translate", "", false},
		{"agent.", "", false},
	}
	for _, s := range senders {
		e := Envelope{Sender: s.sender}
		got, ok := e.AgentReplyTopic()
		if got != s.want || ok != s.ok {
			t.Errorf("Envelope{Sender: %q}.AgentReplyTopic() = %q, %v, want %q, %v", s.sender, got, ok, s.want, s.ok)
		}
	}
}
