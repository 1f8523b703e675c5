package collab

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
)

type world struct {
	bus   *bus.Memory
	clock *bustest.FakeClock
}

func newWorld(t *testing.T) world {
	t.Helper()
	clock := bustest.NewFakeClock(t0)
	b, err := bus.NewMemory(bus.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return world{bus: b, clock: clock}
}

func (w world) agent(t *testing.T, id string, opts Options) *Collaborator {
	t.Helper()
	opts.Clock = w.clock
	c, err := New(context.Background(), w.bus, id, opts)
	if err != nil {
		t.Fatalf("New(%s) = %v", id, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// listen subscribes h to pattern and returns a recorder of decoded events.
func (w world) listen(t *testing.T, pattern string, h func(Event)) *events {
	t.Helper()
	ev := &events{}
	_, err := w.bus.Subscribe(context.Background(), pattern, func(_ context.Context, m bus.Message) (bus.Ack, error) {
		e, err := Decode(m)
		if err != nil {
			return bus.Ack{}, err
		}
		ev.add(e)
		if h != nil {
			h(e)
		}
		return bus.Ack{}, nil // never stops a walk: observers only
	}, bus.SubscribeOptions{Name: pattern})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

type events struct {
	mu   sync.Mutex
	list []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

// waitType waits for an event of type typ and returns it.
func (e *events) waitType(t *testing.T, typ string) Event {
	t.Helper()
	var found Event
	bustest.WaitFor(t, "a "+typ+" event", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, ev := range e.list {
			if ev.Type == typ {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

func (e *events) ofType(typ string) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.list {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func payload(t *testing.T, v any) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRequestReply(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	requester := w.agent(t, "coordinator", Options{})
	echo := w.agent(t, "echo", Options{})
	decoyRes := make(chan bus.Result, 1)
	replied := make(chan error, 1)
	w.listen(t, "service.echo", func(req Event) {
		// A reply with another correlation id must be ignored.
		decoy := Event{Type: TypeReply, Metadata: map[string]string{KeyCorrelationID: "someone-else"}}
		m, _ := decoy.Message(req.Metadata[KeyReplyTo])
		res, _ := w.bus.Request(ctx, m)
		decoyRes <- res
		_, err := echo.Reply(ctx, req, req.Payload)
		replied <- err
	})

	reply, ok, err := requester.RequestReply(ctx, "service.echo", payload(t, map[string]string{"text": "hi"}), 5*time.Second)
	if err != nil || !ok {
		t.Fatalf("RequestReply() = %v, %v, want a reply", ok, err)
	}
	if reply.Type != TypeReply || reply.Source != "agent.echo" || string(reply.Payload) != `{"text":"hi"}` {
		t.Errorf("reply = %+v, want collab.reply from agent.echo echoing the payload", reply)
	}
	env := reply.Envelope(t0)
	if env.Sender != "agent.echo" || env.Hop != 1 || env.TTL != DefaultTTL-1 || env.CorrelationID != env.ThreadID || env.ReplyTo != ReplyTopic(env.ThreadID) {
		t.Errorf("reply envelope = %+v, want sender agent.echo, one hop taken, the request's thread and correlation", env)
	}
	if res := bustest.Recv(t, "the decoy result", decoyRes); res.Processed() {
		t.Errorf("decoy reply with another correlation was processed: %+v", res.Acks)
	}
	// The reply's own walk may still be running when RequestReply returns;
	// wait for it so the bus is not closed under it.
	if err := bustest.Recv(t, "the end of Reply", replied); err != nil {
		t.Errorf("Reply() = %v", err)
	}
}

func TestRequestReplyTimeout(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	requester := w.agent(t, "coordinator", Options{})
	late := w.agent(t, "late", Options{})
	slow := w.listen(t, "service.slow", nil)
	observer := w.listen(t, "thread.*", nil)

	type outcome struct {
		ok  bool
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		_, ok, err := requester.RequestReply(ctx, "service.slow", payload(t, 1), 5*time.Second)
		done <- outcome{ok, err}
	}()
	w.clock.WaitForTimer(t, 5*time.Second)
	w.clock.Advance(5 * time.Second)
	got := bustest.Recv(t, "RequestReply to time out", done)
	if got.ok || got.err != nil {
		t.Fatalf("RequestReply() on timeout = %v, %v, want false, nil", got.ok, got.err)
	}
	timeout := observer.waitType(t, TypeTimeout)
	if timeout.Metadata["reason"] != "request_reply_timeout" || timeout.Topic != timeout.Metadata[KeyReplyTo] {
		t.Errorf("collab.timeout = %+v, want reason request_reply_timeout on the reply topic", timeout)
	}
	req := slow.waitType(t, TypeRequest)
	res, err := late.Reply(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Processed() {
		t.Errorf("a reply after the timeout was processed: %+v", res.Acks)
	}
}

func TestRequestReplyValidation(t *testing.T) {
	w := newWorld(t)
	c := w.agent(t, "a", Options{})
	tests := []struct {
		name    string
		topic   string
		timeout time.Duration
	}{
		{"zero timeout", "svc", 0},
		{"negative timeout", "svc", -time.Second},
		{"bad topic", "svc *", time.Second},
	}
	for _, tt := range tests {
		if _, _, err := c.RequestReply(context.Background(), tt.topic, nil, tt.timeout); err == nil {
			t.Errorf("RequestReply(%s) = nil error, want an error", tt.name)
		}
	}
}

func TestFanoutFanin(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	coordinator := w.agent(t, "coordinator", Options{})
	observer := w.listen(t, "thread.*", nil)
	replied := make(chan string, 10)
	var topics []string
	for _, id := range []string{"w1", "w2", "w3"} {
		worker := w.agent(t, id, Options{})
		topic := "work." + id
		topics = append(topics, topic)
		w.listen(t, topic, func(req Event) {
			if _, err := worker.Reply(ctx, req, payload(t, map[string]string{"worker": id})); err != nil {
				t.Errorf("Reply() = %v", err)
			}
			replied <- id
		})
	}

	t.Run("first k", func(t *testing.T) {
		got, err := coordinator.FanoutFanin(ctx, topics, payload(t, "task"), 2, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("FanoutFanin(first 2 of 3) returned %d replies, want 2", len(got))
		}
		summary := observer.waitType(t, TypeSummary)
		if summary.Metadata["received"] != "2" || summary.Metadata["target_first_k"] != "2" || summary.Topic != got[0].Topic {
			t.Errorf("summary = %+v on %s, want received 2, target 2 on the reply topic %s", summary.Metadata, summary.Topic, got[0].Topic)
		}
		for range 3 {
			bustest.Recv(t, "every worker to answer", replied)
		}
	})

	t.Run("timeout with fewer", func(t *testing.T) {
		done := make(chan []Event, 1)
		go func() {
			got, err := coordinator.FanoutFanin(ctx, topics, payload(t, "task"), 5, 3*time.Second)
			if err != nil {
				t.Errorf("FanoutFanin() = %v", err)
			}
			done <- got
		}()
		for range 3 {
			bustest.Recv(t, "every worker to answer", replied)
		}
		w.clock.WaitForTimer(t, 3*time.Second)
		w.clock.Advance(3 * time.Second)
		got := bustest.Recv(t, "FanoutFanin to time out", done)
		workers := map[string]bool{}
		for _, e := range got {
			var p map[string]string
			_ = json.Unmarshal(e.Payload, &p)
			workers[p["worker"]] = true
		}
		if diff := cmp.Diff(map[string]bool{"w1": true, "w2": true, "w3": true}, workers); diff != "" {
			t.Errorf("replies by worker (-want +got):\n%s", diff)
		}
		var summary Event
		bustest.WaitFor(t, "the second summary", func() bool {
			s := observer.ofType(TypeSummary)
			if len(s) < 2 {
				return false
			}
			summary = s[1]
			return true
		})
		if summary.Metadata["received"] != "3" || summary.Metadata["target_first_k"] != "5" {
			t.Errorf("summary = %+v, want received 3, target 5", summary.Metadata)
		}
	})
}

func TestFanoutFaninValidation(t *testing.T) {
	w := newWorld(t)
	c := w.agent(t, "a", Options{})
	tests := []struct {
		name    string
		topics  []string
		firstK  int
		timeout time.Duration
		wantErr bool
	}{
		{"no topics is a no-op", nil, 1, time.Second, false},
		{"no topics wins over a bad first_k", []string{}, 0, 0, false},
		{"zero first_k", []string{"x"}, 0, time.Second, true},
		{"zero timeout", []string{"x"}, 1, 0, true},
		{"bad topic", []string{"x", ""}, 1, time.Second, true},
	}
	for _, tt := range tests {
		got, err := c.FanoutFanin(context.Background(), tt.topics, nil, tt.firstK, tt.timeout)
		if (err != nil) != tt.wantErr || len(got) != 0 {
			t.Errorf("FanoutFanin(%s) = %v, %v, want no replies and error=%v", tt.name, got, err, tt.wantErr)
		}
	}
}

func TestContractNet(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	coordinator := w.agent(t, "coordinator", Options{})
	proposed := make(chan string, 10)
	var lastCFP Event
	var cfpMu sync.Mutex
	bidders := []struct {
		id, pattern string
		score       string
	}{
		// Distinct patterns: identical ones would supersede each other.
		{"b1", "thread.job-1.broadcast", "0.5"},
		{"b2", "thread.job-1.*", "0.9"},
		{"b3", "thread.*.broadcast", "not-a-number"},
	}
	seen := map[string]*events{}
	for _, b := range bidders {
		agent := w.agent(t, b.id, Options{})
		seen[b.id] = w.listen(t, b.pattern, func(e Event) {
			if e.Type != TypeCFP {
				return
			}
			cfpMu.Lock()
			lastCFP = e
			cfpMu.Unlock()
			if score, err := strconv.ParseFloat(b.score, 64); err == nil {
				if _, err := agent.Propose(ctx, e, score, payload(t, b.id)); err != nil {
					t.Errorf("Propose() = %v", err)
				}
				proposed <- b.id
				return
			}
			// An invalid score can only be sent by hand.
			ans := Event{Type: TypeProposal, Metadata: map[string]string{}, Payload: payload(t, b.id)}
			env := e.Envelope(t0)
			env.NextHop()
			env.Sender = agent.Sender()
			env.Apply(ans.Metadata)
			ans.Metadata[KeyScore] = b.score
			m, _ := ans.Message(env.ReplyTo)
			if _, err := w.bus.Request(ctx, m); err != nil {
				t.Errorf("propose: %v", err)
			}
			proposed <- b.id
		})
	}

	done := make(chan []Event, 1)
	go func() {
		got, err := coordinator.ContractNet(ctx, "job-1", payload(t, "translate"), 10*time.Second, 2)
		if err != nil {
			t.Errorf("ContractNet() = %v", err)
		}
		done <- got
	}()
	for range bidders {
		bustest.Recv(t, "every bidder to propose", proposed)
	}
	w.clock.WaitForTimer(t, 10*time.Second)
	w.clock.Advance(10 * time.Second)
	winners := bustest.Recv(t, "ContractNet to close its window", done)
	var order []string
	for _, e := range winners {
		order = append(order, e.Metadata[KeySender])
	}
	if diff := cmp.Diff([]string{"agent.b2", "agent.b1"}, order); diff != "" {
		t.Errorf("winners by sender (-want +got):\n%s", diff)
	}

	summary := seen["b3"].waitType(t, TypeSummary)
	wantSummary := map[string]string{"winners": "2", "max_awards": "2", "received": "3"}
	for k, v := range wantSummary {
		if summary.Metadata[k] != v {
			t.Errorf("summary %s = %q, want %q", k, summary.Metadata[k], v)
		}
	}
	// The bus delivers to one subscriber in publish order, so the awards
	// are in by the time the summary is.
	var awardedTo []string
	for _, a := range seen["b3"].ofType(TypeAward) {
		awardedTo = append(awardedTo, a.Metadata["award_to"])
		if a.Metadata[KeySender] != "agent.coordinator" || a.Topic != "thread.job-1.broadcast" {
			t.Errorf("award = %+v on %s, want sender agent.coordinator on thread.job-1.broadcast", a.Metadata, a.Topic)
		}
	}
	if diff := cmp.Diff([]string{"agent.b2", "agent.b1"}, awardedTo); diff != "" {
		t.Errorf("awards (-want +got):\n%s", diff)
	}

	cfpMu.Lock()
	cfp := lastCFP
	cfpMu.Unlock()
	late := w.agent(t, "late", Options{})
	res, err := late.Propose(ctx, cfp, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Processed() {
		t.Errorf("a proposal after the window was processed: %+v", res.Acks)
	}
}

func TestContractNetNoProposals(t *testing.T) {
	w := newWorld(t)
	c := w.agent(t, "coordinator", Options{})
	observer := w.listen(t, "thread.*", nil)
	done := make(chan []Event, 1)
	go func() {
		got, err := c.ContractNet(context.Background(), "quiet", nil, time.Second, 1)
		if err != nil {
			t.Errorf("ContractNet() = %v", err)
		}
		done <- got
	}()
	w.clock.WaitForTimer(t, time.Second)
	w.clock.Advance(time.Second)
	if got := bustest.Recv(t, "ContractNet to return", done); len(got) != 0 {
		t.Errorf("ContractNet() with no bidders = %v, want none", got)
	}
	if s := observer.waitType(t, TypeSummary); s.Metadata["winners"] != "0" {
		t.Errorf("summary winners = %q, want 0", s.Metadata["winners"])
	}
}

func TestContractNetValidation(t *testing.T) {
	w := newWorld(t)
	c := w.agent(t, "a", Options{})
	tests := []struct {
		name      string
		thread    string
		window    time.Duration
		maxAwards int
	}{
		{"zero window", "t", 0, 1},
		{"zero max_awards", "t", time.Second, 0},
		{"empty thread", "", time.Second, 1},
		{"wildcard thread", "t*", time.Second, 1},
	}
	for _, tt := range tests {
		if _, err := c.ContractNet(context.Background(), tt.thread, nil, tt.window, tt.maxAwards); err == nil {
			t.Errorf("ContractNet(%s) = nil error, want an error", tt.name)
		}
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		score string
		want  float64
	}{
		{"0.9", 0.9},
		{"-2", -2},
		{"", 0},
		{"abc", 0},
		{"NaN", 0},
	}
	for _, tt := range tests {
		e := Event{Metadata: map[string]string{KeyScore: tt.score}}
		if got := e.Score(); got != tt.want {
			t.Errorf("Score(%q) = %v, want %v", tt.score, got, tt.want)
		}
	}
}

func TestMailbox(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	got := make(chan Event, 1)
	expert := w.agent(t, "expert", Options{Inbox: func(_ context.Context, e Event) (bus.Ack, error) {
		got <- e
		return bus.Ack{Processed: true}, nil
	}})
	plain := w.agent(t, "plain", Options{})

	direct := Event{Type: TypeRequest, Metadata: WithAgentReply("project-1", "agent.coordinator", "coordinator", t0).Metadata(), Payload: payload(t, "task")}
	m, _ := direct.Message(AgentReplyTopic("expert"))
	res, err := w.bus.Request(ctx, m)
	if err != nil || !res.Processed() {
		t.Fatalf("Request(agent.expert.replies) = %+v, %v, want processed by the inbox", res, err)
	}
	e := bustest.Recv(t, "the inbox", got)
	if e.Type != TypeRequest || e.Metadata[KeyReplyTo] != "agent.coordinator.replies" || e.Topic != "agent.expert.replies" {
		t.Errorf("inbox got %+v, want the direct request", e)
	}

	m.Topic = AgentReplyTopic("plain")
	if res, _ := w.bus.Request(ctx, m); res.Delivered != 1 || res.Processed() {
		t.Errorf("Request(agent.plain.replies) = %+v, want delivered and not processed: no inbox", res)
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	if res, _ := w.bus.Request(ctx, m); res.Delivered != 0 {
		t.Errorf("Request after Close delivered to %d, want 0", res.Delivered)
	}
	_ = expert
	if _, err := New(ctx, w.bus, "bad id", Options{}); err == nil {
		t.Errorf("New(bad id) = nil error, want an error")
	}
}

func TestReplyExpired(t *testing.T) {
	w := newWorld(t)
	c := w.agent(t, "a", Options{})
	req := Event{Type: TypeRequest, Metadata: map[string]string{KeyThreadID: "t", KeyTTL: "1", KeyReplyTo: "thread.t.reply"}}
	if _, err := c.Reply(context.Background(), req, nil); !errors.Is(err, ErrExpired) {
		t.Errorf("Reply() with ttl 1 = %v, want ErrExpired", err)
	}
}

// TestContractNetUntil: the call closes as soon as enough says so, without
// its window ever passing (the clock never moves), ranks what came as
// ContractNet does, and refuses a proposal that comes after.
func TestContractNetUntil(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	coordinator := w.agent(t, "coordinator", Options{})
	late := make(chan bool, 1)
	closed := make(chan struct{})
	for i, b := range []struct {
		id, pattern string
		score       float64
	}{{"b1", "thread.job-2.broadcast", 0.25}, {"b2", "thread.job-2.*", 0.75}, {"b3", "thread.*.broadcast", 1}} {
		agent := w.agent(t, b.id, Options{})
		w.listen(t, b.pattern, func(e Event) {
			if e.Type != TypeCFP {
				return
			}
			if i == 2 {
				// The third waits until the call has closed.
				go func() {
					<-closed
					res, err := agent.Propose(ctx, e, b.score, payload(t, b.id))
					late <- err == nil && !res.Processed()
				}()
				return
			}
			// A delivery the bus makes as the test's cleanup closes it has
			// no one to answer: only an error before that is a failure.
			if _, err := agent.Propose(ctx, e, b.score, payload(t, b.id)); err != nil && !errors.Is(err, bus.ErrClosed) {
				t.Errorf("Propose() = %v", err)
			}
		})
	}
	done := make(chan []Event, 1)
	go func() {
		got, err := coordinator.ContractNetUntil(ctx, "job-2", nil, time.Hour, 3, func(p []Event) bool { return len(p) >= 2 })
		if err != nil {
			t.Errorf("ContractNetUntil() = %v", err)
		}
		done <- got
	}()
	got := bustest.Recv(t, "ContractNetUntil to return before its window", done)
	close(closed)
	if len(got) != 2 || got[0].Metadata[KeySender] != "agent.b2" || got[1].Metadata[KeySender] != "agent.b1" {
		t.Fatalf("winners = %v, want b2 then b1", got)
	}
	if !bustest.Recv(t, "the late proposal's answer", late) {
		t.Error("a proposal after the call closed was taken")
	}
}

// heldBus is a bus whose removal of a call's reply subscription waits
// until released: on a bus spanning processes it is a round trip to the
// subscription registry. It records the order of the removals.
type heldBus struct {
	*bus.Memory
	release chan struct{}
	mu      sync.Mutex
	removed []string
}

type heldSub struct {
	bus.Subscription
	b *heldBus
}

func (h heldSub) Unsubscribe() error {
	if strings.HasSuffix(h.Pattern(), ".reply") {
		<-h.b.release
	}
	err := h.Subscription.Unsubscribe()
	h.b.mu.Lock()
	h.b.removed = append(h.b.removed, h.Pattern())
	h.b.mu.Unlock()
	return err
}

func (h *heldBus) Subscribe(ctx context.Context, pattern string, fn bus.Handler, opts bus.SubscribeOptions) (bus.Subscription, error) {
	s, err := h.Memory.Subscribe(ctx, pattern, fn, opts)
	if err != nil {
		return s, err
	}
	return heldSub{Subscription: s, b: h}, nil
}

// TestContractNetUntilDoesNotWaitForItsUnsubscribe: a call that closed
// returns its bids without waiting for its reply subscription to be
// removed; a late proposal is refused meanwhile, and Close removes the
// mailbox only once that removal is done.
func TestContractNetUntilDoesNotWaitForItsUnsubscribe(t *testing.T) {
	w := newWorld(t)
	hb := &heldBus{Memory: w.bus, release: make(chan struct{})}
	ctx := context.Background()
	coordinator, err := New(ctx, hb, "coordinator", Options{Clock: w.clock})
	if err != nil {
		t.Fatal(err)
	}
	bidder := w.agent(t, "b1", Options{})
	got := make(chan Event, 1)
	w.listen(t, "thread.job-3.broadcast", func(e Event) {
		if e.Type == TypeCFP {
			got <- e
			if _, err := bidder.Propose(ctx, e, 1, payload(t, "b1")); err != nil && !errors.Is(err, bus.ErrClosed) {
				t.Errorf("Propose() = %v", err)
			}
		}
	})
	done := make(chan []Event, 1)
	go func() {
		bids, err := coordinator.ContractNetUntil(ctx, "job-3", nil, time.Hour, 1, func(p []Event) bool { return len(p) >= 1 })
		if err != nil {
			t.Errorf("ContractNetUntil() = %v", err)
		}
		done <- bids
	}()
	cfp := bustest.Recv(t, "the call for proposals", got)
	bids := bustest.Recv(t, "ContractNetUntil to return before its subscription is removed", done)
	if len(bids) != 1 || bids[0].Metadata[KeySender] != "agent.b1" {
		t.Fatalf("winners = %v, want b1", bids)
	}
	if res, err := bidder.Propose(ctx, cfp, 1, payload(t, "b1")); err != nil || res.Processed() {
		t.Fatalf("a proposal after the call closed: %+v, %v; want refused", res, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- coordinator.Close() }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		coordinator.closeMu.Lock()
		began := coordinator.closed
		coordinator.closeMu.Unlock()
		if began {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not begin")
		}
	}
	close(hb.release)
	if err := bustest.Recv(t, "Close", closed); err != nil {
		t.Fatal(err)
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if want := []string{"thread.job-3.reply", "agent.coordinator.replies"}; !slices.Equal(hb.removed, want) {
		t.Fatalf("removed %v, want %v: Close removes the mailbox once the call's subscription is gone", hb.removed, want)
	}
}

// countingBus counts the subscriptions made through it.
type countingBus struct {
	*bus.Memory
	mu   sync.Mutex
	subs []string
}

func (b *countingBus) Subscribe(ctx context.Context, pattern string, fn bus.Handler, opts bus.SubscribeOptions) (bus.Subscription, error) {
	b.mu.Lock()
	b.subs = append(b.subs, pattern)
	b.mu.Unlock()
	return b.Memory.Subscribe(ctx, pattern, fn, opts)
}

func (b *countingBus) made() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.subs)
}

// TestListenCalls: the calls on threads a collaborator listens to collect
// their proposals through the one subscription ListenCalls made, none of
// their own; two calls at once each get their own proposals, and a
// proposal for a call that is not open, or no longer, is refused.
func TestListenCalls(t *testing.T) {
	w := newWorld(t)
	cb := &countingBus{Memory: w.bus}
	ctx := context.Background()
	coordinator, err := New(ctx, cb, "coordinator", Options{Clock: w.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { coordinator.Close() })
	if err := coordinator.ListenCalls(ctx, "offer-c1-"); err != nil {
		t.Fatal(err)
	}
	before := len(cb.made())
	bidder := w.agent(t, "b1", Options{})
	cfps := make(chan Event, 2)
	w.listen(t, "thread.offer-c1-*.broadcast", func(e Event) {
		if e.Type != TypeCFP {
			return
		}
		cfps <- e
		score, _ := strconv.ParseFloat(string(e.Payload), 64)
		if _, err := bidder.Propose(ctx, e, score, payload(t, "b1")); err != nil && !errors.Is(err, bus.ErrClosed) {
			t.Errorf("Propose() = %v", err)
		}
	})
	// A proposal for a call never opened on a thread listened to.
	stray := Event{Type: TypeCFP, Metadata: NewEnvelope("offer-c1-none", "agent.coordinator", t0).Metadata()}
	if res, err := bidder.Propose(ctx, stray, 1, nil); err != nil || res.Processed() {
		t.Fatalf("a proposal for no open call: %+v, %v; want refused", res, err)
	}
	type call struct {
		thread string
		bids   []Event
	}
	done := make(chan call, 2)
	for i, thread := range []string{"offer-c1-a", "offer-c1-b"} {
		go func() {
			bids, err := coordinator.ContractNetUntil(ctx, thread, json.RawMessage(strconv.Itoa(i)+".5"), time.Hour, 3, func(p []Event) bool { return len(p) >= 1 })
			if err != nil {
				t.Errorf("ContractNetUntil(%s) = %v", thread, err)
			}
			done <- call{thread, bids}
		}()
	}
	for range 2 {
		c := bustest.Recv(t, "a call to close", done)
		want := 0.5
		if c.thread == "offer-c1-b" {
			want = 1.5
		}
		if len(c.bids) != 1 || c.bids[0].Score() != want || c.bids[0].Metadata[KeyThreadID] != c.thread {
			t.Fatalf("bids of %s = %v, want one of score %v", c.thread, c.bids, want)
		}
	}
	if made := cb.made(); len(made) != before {
		t.Fatalf("the calls subscribed to %v; want none of their own", made[before:])
	}
	late := bustest.Recv(t, "a call for proposals", cfps)
	if res, err := bidder.Propose(ctx, late, 1, payload(t, "b1")); err != nil || res.Processed() {
		t.Fatalf("a proposal after its call closed: %+v, %v; want refused", res, err)
	}
	// A thread the listener does not cover subscribes as before.
	other, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = coordinator.ContractNetUntil(other, "other-1", nil, time.Hour, 1, func(p []Event) bool { return true })
	}()
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(cb.made(), "thread.other-1.reply"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a call on another thread subscribed to %v", cb.made()[before:])
		}
	}
}
