// Package collab implements the collaboration primitives on the bus:
// envelope metadata (thread, correlation, sender, reply topic, hop budget),
// thread and agent topics, and three patterns: RequestReply, FanoutFanin
// and ContractNet.
//
// # Wire format
//
// A collaboration message is a bus message whose payload is an Event:
//
//	{"type": "collab.request", "source": "agent.coordinator",
//	 "metadata": {"thread_id": "...", "correlation_id": "...", "sender": "agent.coordinator",
//	              "reply_to": "thread.<id>.reply", "ttl": "16", "hop": "0", "ts": "1700000000000"},
//	 "payload": {...}}
//
// Metadata values are strings, so peers in any language read them the same
// way; "type" doubles as the payload type the JSON-RPC face requires.
//
// # Delivery
//
// Requests, CFPs, awards, timeouts and summaries are published (fire and
// forget). Replies and proposals are sent with Request, so the replier's
// call returns once the waiting collaborator has taken the reply, and its
// result says whether anyone was still waiting.
//
// A collaborator listens on a thread's reply topic with an exact
// subscription. Under the bus's last-match-wins rule a second identical
// subscription supersedes the first, so other listeners on a thread's reply
// topic should use a pattern such as "thread.<id>.*". Broadcast topics
// (thread.<id>.broadcast) are the exception: every subscription matching
// one gets each message, so any number of participants may subscribe to
// the very same broadcast topic (see bus.BroadcastPattern).
package collab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/bus"
)

// The reserved event types.
const (
	TypeRequest  = "collab.request"
	TypeReply    = "collab.reply"
	TypeCFP      = "collab.cfp"
	TypeProposal = "collab.proposal"
	TypeAward    = "collab.award"
	TypeBarrier  = "collab.barrier"
	TypeTimeout  = "collab.timeout"
	TypeSummary  = "collab.summary"
)

// ErrExpired is returned by Reply and Propose when the request's hop budget
// is spent; nothing was sent.
var ErrExpired = errors.New("hop budget (ttl) spent; message dropped")

// Event is a collaboration message.
type Event struct {
	Type     string            `json:"type"`
	Source   string            `json:"source,omitempty"`
	Metadata map[string]string `json:"metadata"`
	Payload  json.RawMessage   `json:"payload,omitempty"`

	// Topic and MessageID are those of the bus message the event came in.
	Topic     string `json:"-"`
	MessageID string `json:"-"`
}

// Envelope reads the event's envelope, falling back as FromMetadata says.
func (e Event) Envelope(now time.Time) Envelope {
	return FromMetadata(e.Metadata, e.MessageID, now)
}

// Score is the event's "score" metadata, 0 when missing or not a number.
func (e Event) Score() float64 {
	v, err := strconv.ParseFloat(e.Metadata[KeyScore], 64)
	if err != nil || v != v { // NaN ranks as 0 too
		return 0
	}
	return v
}

// Decode reads an Event from a bus message.
func Decode(m bus.Message) (Event, error) {
	var e Event
	if err := json.Unmarshal(m.Payload, &e); err != nil {
		return Event{}, fmt.Errorf("decode collaboration event on %s: %w", m.Topic, err)
	}
	if e.Type == "" {
		return Event{}, fmt.Errorf("decode collaboration event on %s: no type", m.Topic)
	}
	if e.Metadata == nil {
		e.Metadata = map[string]string{}
	}
	e.Topic, e.MessageID = m.Topic, m.ID
	return e, nil
}

// Message encodes e as a bus message on topic.
func (e Event) Message(topic string) (bus.Message, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return bus.Message{}, fmt.Errorf("encode %s event: %w", e.Type, err)
	}
	return bus.Message{Topic: topic, Payload: data}, nil
}

// Bus is what a Collaborator needs of the bus.
type Bus interface {
	Publish(ctx context.Context, m bus.Message) (bus.Result, error)
	Request(ctx context.Context, m bus.Message) (bus.Result, error)
	Subscribe(ctx context.Context, pattern string, h bus.Handler, opts bus.SubscribeOptions) (bus.Subscription, error)
}

// Options tune a Collaborator.
type Options struct {
	// Clock drives timeouts and timestamps; nil means the real clock.
	Clock bus.Clock
	// Inbox handles events arriving on the agent's private mailbox
	// (agent.<id>.replies). Without one, they are acknowledged as not
	// processed.
	Inbox func(ctx context.Context, e Event) (bus.Ack, error)
}

// Collaborator runs the collaboration patterns for one agent. It is safe for
// concurrent use; each call works on its own thread.
type Collaborator struct {
	bus     Bus
	sender  string
	clock   bus.Clock
	inbox   func(ctx context.Context, e Event) (bus.Ack, error)
	mailbox bus.Subscription
	// closing counts the subscriptions of ended calls still being removed
	// (closeLater), which Close waits for; closed (under closeMu) says
	// Close began.
	closing sync.WaitGroup
	closeMu sync.Mutex
	closed  bool
	// callSub listens to the reply topics of the threads whose id begins
	// with callPrefix (ListenCalls); calls holds the open calls on them,
	// by thread id (under callsMu).
	callSub    bus.Subscription
	callPrefix string
	callsMu    sync.Mutex
	calls      map[string]*collector
}

// New returns the collaborator of agent agentID, subscribed to its private
// mailbox agent.<id>.replies. Close removes that subscription. agentID may
// be given bare ("client") or as a sender ("agent.client"); both name the
// sender agent.client.
func New(ctx context.Context, b Bus, agentID string, opts Options) (*Collaborator, error) {
	agentID = strings.TrimPrefix(agentID, "agent.")
	if err := validID("agent id", agentID); err != nil {
		return nil, fmt.Errorf("new collaborator: %w", err)
	}
	c := &Collaborator{bus: b, sender: "agent." + agentID, clock: opts.Clock, inbox: opts.Inbox}
	if c.clock == nil {
		c.clock = bus.SystemClock{}
	}
	sub, err := b.Subscribe(ctx, AgentReplyTopic(agentID), c.handleMailbox, bus.SubscribeOptions{Name: c.sender})
	if err != nil {
		return nil, fmt.Errorf("new collaborator %s: subscribe to its mailbox: %w", agentID, err)
	}
	c.mailbox = sub
	return c, nil
}

// Sender is the collaborator's identity, "agent.<id>".
func (c *Collaborator) Sender() string { return c.sender }

// Close removes the mailbox subscription, once the subscriptions of the
// calls that ended are removed.
func (c *Collaborator) Close() error {
	c.closeMu.Lock()
	c.closed = true
	sub := c.callSub
	c.closeMu.Unlock()
	c.closing.Wait()
	var err error
	if sub != nil {
		err = sub.Unsubscribe()
	}
	return errors.Join(err, c.mailbox.Unsubscribe())
}

// ListenCalls subscribes once, now, to the reply topics of the threads
// whose id begins with prefix (thread.<prefix>*.reply): a ContractNetUntil
// on such a thread then collects its proposals there instead of
// subscribing to its own reply topic. On a bus spanning processes each new
// subscription reaches the others through a registry: a round trip before
// the call goes out, and a bidder whose bus has not yet heard of it has its
// proposal reach nobody. A proposal on such a thread with no call open is
// refused. Close removes the subscription; ListenCalls is called once.
func (c *Collaborator) ListenCalls(ctx context.Context, prefix string) error {
	if err := validID("thread id prefix", prefix); err != nil {
		return fmt.Errorf("listen for calls: %w", err)
	}
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.callSub != nil {
		return fmt.Errorf("listen for calls on %s: listening on %s already", prefix, c.callPrefix)
	}
	c.calls = map[string]*collector{}
	c.callPrefix = prefix
	sub, err := c.bus.Subscribe(ctx, "thread."+prefix+"*.reply", c.handleCalls, bus.SubscribeOptions{Name: c.sender + "/calls"})
	if err != nil {
		return fmt.Errorf("listen for calls on %s: %w", prefix, err)
	}
	c.callSub = sub
	return nil
}

// handleCalls hands a message on a reply topic ListenCalls listens to to
// the call open on its thread.
func (c *Collaborator) handleCalls(ctx context.Context, m bus.Message) (bus.Ack, error) {
	thread := strings.TrimSuffix(strings.TrimPrefix(m.Topic, "thread."), ".reply")
	c.callsMu.Lock()
	col := c.calls[thread]
	c.callsMu.Unlock()
	if col == nil {
		return bus.Ack{Message: "no call open on thread " + thread}, nil
	}
	return col.handle(ctx, m)
}

func (c *Collaborator) handleMailbox(ctx context.Context, m bus.Message) (bus.Ack, error) {
	e, err := Decode(m)
	if err != nil {
		return bus.Ack{Message: err.Error()}, nil
	}
	if c.inbox == nil {
		return bus.Ack{Message: c.sender + " has no inbox handler"}, nil
	}
	return c.inbox(ctx, e)
}

func (c *Collaborator) event(typ string, env Envelope, payload json.RawMessage) Event {
	return Event{Type: typ, Source: c.sender, Metadata: env.Metadata(), Payload: payload}
}

func (c *Collaborator) publish(ctx context.Context, topic string, e Event) error {
	m, err := e.Message(topic)
	if err != nil {
		return err
	}
	if _, err := c.bus.Publish(ctx, m); err != nil {
		return fmt.Errorf("publish %s on %s: %w", e.Type, topic, err)
	}
	return nil
}

// RequestReply publishes a collab.request on topic and waits for the first
// collab.reply with its correlation id on a new thread's reply topic. On
// timeout it emits collab.timeout on that reply topic and returns ok false.
// timeout must be positive.
func (c *Collaborator) RequestReply(ctx context.Context, topic string, payload json.RawMessage, timeout time.Duration) (reply Event, ok bool, err error) {
	if timeout <= 0 {
		return Event{}, false, fmt.Errorf("request/reply on %s: timeout must be positive, got %s", topic, timeout)
	}
	if err := bus.ValidateTopic(topic); err != nil {
		return Event{}, false, fmt.Errorf("request/reply: %w", err)
	}
	env := NewEnvelope("req-"+newID(), c.sender, c.clock.Now())
	col, err := c.collect(ctx, env, 1, TypeReply)
	if err != nil {
		return Event{}, false, err
	}
	defer col.close()
	if err := c.publish(ctx, topic, c.event(TypeRequest, env, payload)); err != nil {
		return Event{}, false, err
	}
	got, err := col.wait(ctx, c.clock.After(timeout))
	if err != nil {
		return Event{}, false, err
	}
	if len(got) == 0 {
		timedOut := c.event(TypeTimeout, env, nil)
		timedOut.Metadata["reason"] = "request_reply_timeout"
		return Event{}, false, c.publish(ctx, env.ReplyTo, timedOut)
	}
	return got[0], true, nil
}

// FanoutFanin publishes one collab.request to each topic and collects up to
// firstK answers (collab.reply or collab.proposal) within timeout, then emits collab.summary on the thread's
// reply topic with the received count and the target. No topics is a no-op
// returning no replies; otherwise firstK and timeout must be positive.
func (c *Collaborator) FanoutFanin(ctx context.Context, topics []string, payload json.RawMessage, firstK int, timeout time.Duration) ([]Event, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	if firstK <= 0 {
		return nil, fmt.Errorf("fanout/fanin: first_k must be positive, got %d", firstK)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("fanout/fanin: timeout must be positive, got %s", timeout)
	}
	for _, t := range topics {
		if err := bus.ValidateTopic(t); err != nil {
			return nil, fmt.Errorf("fanout/fanin: %w", err)
		}
	}
	env := NewEnvelope("fanout-"+newID(), c.sender, c.clock.Now())
	// Workers answer with a reply or, as Loom's do, with a proposal.
	col, err := c.collect(ctx, env, firstK, TypeReply, TypeProposal)
	if err != nil {
		return nil, err
	}
	defer col.close()
	deadline := c.clock.After(timeout)
	for _, t := range topics {
		if err := c.publish(ctx, t, c.event(TypeRequest, env, payload)); err != nil {
			return nil, err
		}
	}
	got, err := col.wait(ctx, deadline)
	if err != nil {
		return nil, err
	}
	summary := c.event(TypeSummary, env, nil)
	summary.Metadata["received"] = strconv.Itoa(len(got))
	summary.Metadata["target_first_k"] = strconv.Itoa(firstK)
	if err := c.publish(ctx, env.ReplyTo, summary); err != nil {
		return got, err
	}
	return got, nil
}

// ContractNet publishes a collab.cfp on thread.<threadID>.broadcast,
// collects collab.proposal events on the thread's reply topic for the whole
// window, ranks them by their score metadata (descending; a missing or
// invalid score counts as 0, ties keep arrival order), publishes a
// collab.award for each of the best maxAwards on the broadcast topic (with
// award_to naming the proposal's sender), then a collab.summary there, and
// returns the winning proposals. window and maxAwards must be positive.
func (c *Collaborator) ContractNet(ctx context.Context, threadID string, cfp json.RawMessage, window time.Duration, maxAwards int) ([]Event, error) {
	return c.ContractNetUntil(ctx, threadID, cfp, window, maxAwards, nil)
}

// ContractNetUntil is ContractNet whose call for proposals closes before
// the window ends once enough, called with the proposals so far each time
// one arrives, says no better one can come (every bidder known to the
// caller has answered, or one bid with the best score there is). The
// ranking and the awards are ContractNet's; a nil enough waits the whole
// window. It returns once the summary is out: the call's reply
// subscription, closed to proposals by then, is removed after, and Close
// waits for that. On a thread ListenCalls listens to, no subscription is
// made or removed.
func (c *Collaborator) ContractNetUntil(ctx context.Context, threadID string, cfp json.RawMessage, window time.Duration, maxAwards int, enough func([]Event) bool) ([]Event, error) {
	if window <= 0 {
		return nil, fmt.Errorf("contract net: window must be positive, got %s", window)
	}
	if maxAwards <= 0 {
		return nil, fmt.Errorf("contract net: max_awards must be positive, got %d", maxAwards)
	}
	if err := validID("thread id", threadID); err != nil {
		return nil, fmt.Errorf("contract net: %w", err)
	}
	env := NewEnvelope(threadID, c.sender, c.clock.Now())
	col, err := c.collectCall(ctx, env)
	if err != nil {
		return nil, err
	}
	col.mu.Lock()
	col.enough = enough
	col.mu.Unlock()
	defer c.closeLater(col)
	deadline := c.clock.After(window)
	broadcast := env.BroadcastTopic()
	if err := c.publish(ctx, broadcast, c.event(TypeCFP, env, cfp)); err != nil {
		return nil, err
	}
	proposals, err := col.wait(ctx, deadline)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(proposals, func(i, j int) bool { return proposals[i].Score() > proposals[j].Score() })
	winners := proposals[:min(maxAwards, len(proposals))]
	for _, w := range winners {
		award := c.event(TypeAward, env, nil)
		md := make(map[string]string, len(w.Metadata)+8)
		for k, v := range w.Metadata {
			md[k] = v
		}
		md["award_to"] = w.Metadata[KeySender]
		env.Apply(md)
		award.Metadata = md
		if err := c.publish(ctx, broadcast, award); err != nil {
			return winners, err
		}
	}
	summary := c.event(TypeSummary, env, nil)
	summary.Metadata["winners"] = strconv.Itoa(len(winners))
	summary.Metadata["max_awards"] = strconv.Itoa(maxAwards)
	summary.Metadata["received"] = strconv.Itoa(len(proposals))
	if err := c.publish(ctx, broadcast, summary); err != nil {
		return winners, err
	}
	return winners, nil
}

// Reply answers req with a collab.reply on its reply_to topic, keeping its
// thread, correlation and trace context (trace_id, span_id, trace_flags)
// and taking one hop. It returns ErrExpired, sending
// nothing, when the hop budget is spent. The result's acks say whether the
// requester was still waiting.
func (c *Collaborator) Reply(ctx context.Context, req Event, payload json.RawMessage) (bus.Result, error) {
	return c.answer(ctx, req, TypeReply, payload, nil)
}

// Propose answers a collab.cfp with a collab.proposal carrying score,
// keeping the cfp's thread, correlation and trace context as Reply does.
func (c *Collaborator) Propose(ctx context.Context, cfp Event, score float64, payload json.RawMessage) (bus.Result, error) {
	return c.answer(ctx, cfp, TypeProposal, payload, map[string]string{KeyScore: strconv.FormatFloat(score, 'g', -1, 64)})
}

func (c *Collaborator) answer(ctx context.Context, to Event, typ string, payload json.RawMessage, extra map[string]string) (bus.Result, error) {
	env := to.Envelope(c.clock.Now())
	if !env.NextHop() {
		return bus.Result{}, ErrExpired
	}
	env.Sender = c.sender
	env.TS = c.clock.Now().UnixMilli()
	e := c.event(typ, env, payload)
	for _, k := range traceKeys {
		if v, ok := to.Metadata[k]; ok {
			e.Metadata[k] = v
		}
	}
	for k, v := range extra {
		e.Metadata[k] = v
	}
	m, err := e.Message(env.ReplyTo)
	if err != nil {
		return bus.Result{}, err
	}
	res, err := c.bus.Request(ctx, m)
	if err != nil {
		return res, fmt.Errorf("send %s to %s: %w", typ, env.ReplyTo, err)
	}
	return res, nil
}

// collector gathers events of one type and correlation from a thread's
// reply topic.
type collector struct {
	sub   bus.Subscription
	types []string
	corr  string
	limit int // 0: no limit
	// enough, when set, ends the collection early (see ContractNetUntil).
	enough func([]Event) bool
	// thread is set when the collector takes its messages from
	// ListenCalls' subscription (sub nil).
	thread string
	mu     sync.Mutex
	got    []Event
	closed bool
	full   chan struct{} // closed when limit is reached
}

func (c *Collaborator) collect(ctx context.Context, env Envelope, limit int, types ...string) (*collector, error) {
	col := &collector{types: types, corr: env.CorrelationID, limit: limit, full: make(chan struct{})}
	sub, err := c.bus.Subscribe(ctx, env.ReplyTo, col.handle, bus.SubscribeOptions{Name: c.sender + "/" + env.ThreadID})
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", env.ReplyTo, err)
	}
	col.sub = sub
	return col, nil
}

// collectCall is collect for the proposals of a call: through the
// subscription of ListenCalls when the thread is one of its, else through
// one of its own.
func (c *Collaborator) collectCall(ctx context.Context, env Envelope) (*collector, error) {
	c.closeMu.Lock()
	listening := c.callSub != nil && !c.closed && strings.HasPrefix(env.ThreadID, c.callPrefix)
	c.closeMu.Unlock()
	if !listening {
		return c.collect(ctx, env, 0, TypeProposal)
	}
	col := &collector{types: []string{TypeProposal}, corr: env.CorrelationID, full: make(chan struct{}), thread: env.ThreadID}
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	if _, ok := c.calls[env.ThreadID]; ok {
		return nil, fmt.Errorf("contract net: a call is open on thread %s already", env.ThreadID)
	}
	c.calls[env.ThreadID] = col
	return col, nil
}

func (col *collector) handle(_ context.Context, m bus.Message) (bus.Ack, error) {
	e, err := Decode(m)
	if err != nil {
		return bus.Ack{Message: err.Error()}, nil
	}
	if !slices.Contains(col.types, e.Type) || e.Metadata[KeyCorrelationID] != col.corr {
		return bus.Ack{Message: "not a " + col.what() + " for correlation " + col.corr}, nil
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if col.closed || (col.limit > 0 && len(col.got) >= col.limit) {
		return bus.Ack{Message: "no longer collecting " + col.what() + " for correlation " + col.corr}, nil
	}
	col.got = append(col.got, e)
	if col.limit > 0 && len(col.got) == col.limit || col.limit == 0 && col.enough != nil && col.enough(col.got) {
		col.closed = true
		close(col.full)
	}
	return bus.Ack{Processed: true}, nil
}

// wait returns what was collected when the limit is reached or deadline
// fires, and stops collecting.
func (col *collector) wait(ctx context.Context, deadline <-chan time.Time) ([]Event, error) {
	select {
	case <-col.full:
	case <-deadline:
	case <-ctx.Done():
		col.stop()
		return nil, fmt.Errorf("waiting for %s on correlation %s: %w", col.what(), col.corr, ctx.Err())
	}
	return col.stop(), nil
}

func (col *collector) what() string { return strings.Join(col.types, " or ") }

func (col *collector) stop() []Event {
	col.mu.Lock()
	defer col.mu.Unlock()
	col.closed = true
	return col.got
}

// closeLater stops col collecting at once and removes its subscription
// behind the caller's back: on a bus spanning processes the removal is a
// round trip to the subscription registry, which the caller, holding what
// it collected, need not wait for. A late answer is told the collection
// ended, as after the removal it would reach nobody.
func (c *Collaborator) closeLater(col *collector) {
	if col.sub == nil {
		col.stop()
		c.callsMu.Lock()
		delete(c.calls, col.thread)
		c.callsMu.Unlock()
		return
	}
	c.closeMu.Lock()
	if c.closed {
		c.closeMu.Unlock()
		col.close()
		return
	}
	col.stop()
	c.closing.Add(1)
	c.closeMu.Unlock()
	go func() {
		defer c.closing.Done()
		_ = col.sub.Unsubscribe() // only fails when already removed
	}()
}

func (col *collector) close() {
	col.stop()
	_ = col.sub.Unsubscribe() // only fails when already removed
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}
