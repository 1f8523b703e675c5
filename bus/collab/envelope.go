package collab

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Metadata keys of the envelope.
const (
	KeyThreadID      = "thread_id"
	KeyCorrelationID = "correlation_id"
	KeySender        = "sender"
	KeyReplyTo       = "reply_to"
	KeyTTL           = "ttl"
	KeyHop           = "hop"
	KeyTS            = "ts"
	// KeyScore ranks proposals in ContractNet.
	KeyScore = "score"
)

// Trace context keys (W3C trace context, as Loom's responders carry it).
// Reply and Propose copy them from the message they answer, so a thread
// stays one trace.
const (
	KeyTraceID    = "trace_id"
	KeySpanID     = "span_id"
	KeyTraceFlags = "trace_flags"
)

// traceKeys are the metadata keys an answer keeps from its request.
var traceKeys = [...]string{KeyTraceID, KeySpanID, KeyTraceFlags}

// DefaultTTL is the hop budget of a new envelope.
const DefaultTTL = 16

// Envelope is the coordination metadata of a collaboration message.
type Envelope struct {
	ThreadID      string
	CorrelationID string
	// Sender is the logical identity of the publisher, e.g. agent.foo.
	Sender string
	// ReplyTo is where replies go: the thread's reply topic or an agent's
	// private mailbox.
	ReplyTo string
	// TTL is the remaining hop budget; Hop counts hops taken.
	TTL int
	Hop int
	// TS is the emission time in Unix milliseconds.
	TS int64
}

// NewEnvelope starts an envelope on thread threadID: the correlation id is
// the thread id, replies go to the thread's reply topic, TTL is DefaultTTL.
func NewEnvelope(threadID, sender string, now time.Time) Envelope {
	return Envelope{
		ThreadID:      threadID,
		CorrelationID: threadID,
		Sender:        sender,
		ReplyTo:       ReplyTopic(threadID),
		TTL:           DefaultTTL,
		TS:            now.UnixMilli(),
	}
}

// WithAgentReply is NewEnvelope with replies going to agent agentID's
// private mailbox.
func WithAgentReply(threadID, sender, agentID string, now time.Time) Envelope {
	e := NewEnvelope(threadID, sender, now)
	e.ReplyTo = AgentReplyTopic(agentID)
	return e
}

// FromMetadata reads an envelope from message metadata. Missing or
// malformed fields fall back: thread_id to fallbackID, correlation_id to the
// thread id, reply_to to the thread's reply topic, ttl to DefaultTTL, hop to
// 0, ts to now.
func FromMetadata(md map[string]string, fallbackID string, now time.Time) Envelope {
	e := Envelope{
		ThreadID:      md[KeyThreadID],
		CorrelationID: md[KeyCorrelationID],
		Sender:        md[KeySender],
		ReplyTo:       md[KeyReplyTo],
		TTL:           DefaultTTL,
		TS:            now.UnixMilli(),
	}
	if e.ThreadID == "" {
		e.ThreadID = fallbackID
	}
	if e.CorrelationID == "" {
		e.CorrelationID = e.ThreadID
	}
	if e.ReplyTo == "" {
		e.ReplyTo = ReplyTopic(e.ThreadID)
	}
	if v, err := strconv.Atoi(md[KeyTTL]); err == nil {
		e.TTL = v
	}
	if v, err := strconv.Atoi(md[KeyHop]); err == nil && v >= 0 {
		e.Hop = v
	}
	if v, err := strconv.ParseInt(md[KeyTS], 10, 64); err == nil {
		e.TS = v
	}
	return e
}

// Apply writes the envelope into md, overwriting its keys.
func (e Envelope) Apply(md map[string]string) {
	md[KeyThreadID] = e.ThreadID
	md[KeyCorrelationID] = e.CorrelationID
	md[KeySender] = e.Sender
	md[KeyReplyTo] = e.ReplyTo
	md[KeyTTL] = strconv.Itoa(e.TTL)
	md[KeyHop] = strconv.Itoa(e.Hop)
	md[KeyTS] = strconv.FormatInt(e.TS, 10)
}

// Metadata returns the envelope as a new metadata map.
func (e Envelope) Metadata() map[string]string {
	md := make(map[string]string, 7)
	e.Apply(md)
	return md
}

// NextHop takes one hop: Hop grows by one and TTL shrinks by one (never
// below zero). It reports whether budget is left; when it is not, the
// message must be dropped.
func (e *Envelope) NextHop() bool {
	e.Hop++
	if e.TTL > 0 {
		e.TTL--
	}
	return e.TTL > 0
}

// BroadcastTopic is the thread's broadcast topic.
func (e Envelope) BroadcastTopic() string { return BroadcastTopic(e.ThreadID) }

// ReplyTopic is the thread's reply topic.
func (e Envelope) ReplyTopic() string { return ReplyTopic(e.ThreadID) }

// AgentReplyTopic is the private mailbox of the sender when the sender is
// "agent.<id>"; ok is false otherwise.
func (e Envelope) AgentReplyTopic() (topic string, ok bool) {
	id, ok := strings.CutPrefix(e.Sender, "agent.")
	if !ok || id == "" {
		return "", false
	}
	return AgentReplyTopic(id), true
}

// BroadcastTopic returns "thread.<id>.broadcast".
func BroadcastTopic(threadID string) string { return "thread." + threadID + ".broadcast" }

// ReplyTopic returns "thread.<id>.reply".
func ReplyTopic(threadID string) string { return "thread." + threadID + ".reply" }

// AgentReplyTopic returns "agent.<id>.replies", an agent's private mailbox.
func AgentReplyTopic(agentID string) string { return "agent." + agentID + ".replies" }

// validID checks that id can be part of a topic that is also subscribed to
// as an exact pattern.
func validID(what, id string) error {
	if id == "" {
		return fmt.Errorf("empty %s", what)
	}
	if strings.ContainsAny(id, "*?[\\ \t\r\n") {
		return fmt.Errorf("%s %q contains a wildcard, a backslash or white space", what, id)
	}
	return nil
}
