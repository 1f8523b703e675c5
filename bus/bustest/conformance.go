package bustest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/weavehq/weave/bus"
)

// NewBus builds a fresh backend for one test from opts. The suite closes it
// (Close must therefore be safe to call twice).
type NewBus func(t *testing.T, opts bus.Options) bus.Bus

// Run is the conformance suite: every backend must pass it. Each subtest
// builds its own bus with the options it needs, often with a FakeClock as
// Options.Clock, which the backend must use for retry delays, request and
// enqueue timeouts and the idempotency window.
func Run(t *testing.T, newBus NewBus) {
	tests := []struct {
		name string
		fn   func(*testing.T, NewBus)
	}{
		{"Matching", testMatching},
		{"LastMatchWins", testLastMatchWins},
		{"BroadcastReachesEveryone", testBroadcast},
		{"ObserverAndAccept", testObserverAndAccept},
		{"Forget", testForget},
		{"Policies", testPolicies},
		{"RequestAcks", testRequestAcks},
		{"RequestHandlerFailures", testRequestHandlerFailures},
		{"RequestTimeout", testRequestTimeout},
		{"RequestRetryDeadLetterReplay", testRequestRetryDeadLetterReplay},
		{"ReplayDeadLetterToTopic", testReplayDeadLetterToTopic},
		{"PublishRetry", testPublishRetry},
		{"PublishDeadLetter", testPublishDeadLetter},
		{"PublishHandlerPanic", testPublishPanic},
		{"Retained", testRetained},
		{"AppendOnly", testAppendOnly},
		{"Limits", testLimits},
		{"FailingDeadLetterWatcher", testFailingDeadLetterWatcher},
		{"Idempotency", testIdempotency},
		{"Ordering", testOrdering},
		{"SlowSubscriber", testSlowSubscriber},
		{"QueuedDeliveredAfterUnsubscribe", testQueuedAfterUnsubscribe},
		{"Unsubscribe", testUnsubscribe},
		{"Validation", testValidation},
		{"Closed", testClosed},
		{"Concurrent", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newBus) })
	}
}

func open(t *testing.T, newBus NewBus, opts bus.Options) bus.Bus {
	t.Helper()
	b := newBus(t, opts)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close() = %v, want nil", err)
		}
	})
	return b
}

func subscribe(t *testing.T, b bus.Bus, pattern string, h bus.Handler, opts bus.SubscribeOptions) bus.Subscription {
	t.Helper()
	s, err := b.Subscribe(context.Background(), pattern, h, opts)
	if err != nil {
		t.Fatalf("Subscribe(%q) = %v, want nil", pattern, err)
	}
	return s
}

func msg(topic string, fields ...any) bus.Message {
	p := map[string]any{"type": "test"}
	for i := 0; i+1 < len(fields); i += 2 {
		p[fields[i].(string)] = fields[i+1]
	}
	raw, _ := json.Marshal(p)
	return bus.Message{Topic: topic, Payload: raw}
}

func request(t *testing.T, b bus.Bus, m bus.Message) bus.Result {
	t.Helper()
	res, err := b.Request(context.Background(), m)
	if err != nil {
		t.Fatalf("Request(%s) = %v, want nil", m.Topic, err)
	}
	return res
}

func publish(t *testing.T, b bus.Bus, m bus.Message) bus.Result {
	t.Helper()
	res, err := b.Publish(context.Background(), m)
	if err != nil {
		t.Fatalf("Publish(%s) = %v, want nil", m.Topic, err)
	}
	return res
}

func ackers(res bus.Result) []string {
	out := []string{}
	for _, a := range res.Acks {
		out = append(out, a.Subscriber)
	}
	return out
}

func field(t *testing.T, m bus.Message, key string) float64 {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		t.Fatalf("payload %s: %v", m.Payload, err)
	}
	v, _ := p[key].(float64)
	return v
}

func ack(processed bool) bus.Handler {
	return func(context.Context, bus.Message) (bus.Ack, error) { return bus.Ack{Processed: processed}, nil }
}

func testMatching(t *testing.T, newBus NewBus) {
	cases := []struct {
		pattern, topic string
		want           bool
	}{
		{"inbound:*", "inbound:chat-1", true},
		{"inbound:*", "inbound:", true},
		{"inbound:*", "outbound:chat-1", false},
		{"*", "agent:a:b/c", true},
		{"agent:*:done", "agent:w-1:x:done", true},
		{"agent:*:done", "agent:w-1:done:no", false},
		{"inbound:chat-", "inbound:chat-1", true},
		{"inbound:chat-", "inbound:chat", false},
		{"thread.t1.", "thread.t1.reply", true},
		{"files/", "files/a/b", true},
		{"run_", "run_7", true},
		{"agent:w-1", "agent:w-1", true},
		{"agent:w-1", "agent:w-10", false},
		{"Agent:w-1", "agent:w-1", false},
		{"loop:current", "loop:current:x", false},
		{"task:?", "task:7", true},
		{"task:?", "task:77", false},
		{"task:[0-9]", "task:5", true},
		{"task:[!0-9]", "task:5", false},
		{"task:[!0-9]", "task:x", true},
	}
	b := open(t, newBus, bus.Options{DefaultPolicy: bus.ContinueAll})
	subscribed := map[string]bool{}
	for _, c := range cases {
		if !subscribed[c.pattern] {
			subscribed[c.pattern] = true
			subscribe(t, b, c.pattern, ack(true), bus.SubscribeOptions{Name: c.pattern})
		}
	}
	for _, c := range cases {
		t.Run(c.pattern+"|"+c.topic, func(t *testing.T) {
			res := request(t, b, msg(c.topic))
			got := false
			for _, a := range res.Acks {
				got = got || a.Subscriber == c.pattern
			}
			if got != c.want {
				t.Errorf("Request(%q) reached %q = %v, want %v (acks from %v)", c.topic, c.pattern, got, c.want, ackers(res))
			}
		})
	}
}

func testLastMatchWins(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{DefaultPolicy: bus.ContinueAll})
	a := subscribe(t, b, "inbound:*", ack(true), bus.SubscribeOptions{Name: "A"})
	bb := subscribe(t, b, "inbound:critical", ack(true), bus.SubscribeOptions{Name: "B"})
	c := subscribe(t, b, "inbound:*", ack(true), bus.SubscribeOptions{Name: "C"})

	check := func(step, topic string, want []string) {
		t.Helper()
		got := ackers(request(t, b, msg(topic)))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Request(%q) acks (-want +got):\n%s", step, topic, diff)
		}
	}
	check("spec example", "inbound:critical", []string{"C", "B"})
	check("spec example", "inbound:normal", []string{"C"})
	if err := c.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	check("after C left", "inbound:critical", []string{"B", "A"})
	check("after C left", "inbound:normal", []string{"A"})
	d := subscribe(t, b, "inbound:critical", ack(true), bus.SubscribeOptions{Name: "D"})
	check("D supersedes B", "inbound:critical", []string{"D", "A"})
	if err := d.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	check("B back after D left", "inbound:critical", []string{"B", "A"})
	if err := a.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := bb.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	check("all gone", "inbound:critical", []string{})
}

// testBroadcast: on thread.<id>.broadcast, identical patterns do not
// supersede each other; every participant hears each message, newest
// first. Elsewhere last match wins as before.
func testBroadcast(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{DefaultPolicy: bus.ContinueAll})
	for _, name := range []string{"bidder-a", "bidder-b", "bidder-c"} {
		subscribe(t, b, "thread.job-7.broadcast", ack(true), bus.SubscribeOptions{Name: name})
	}
	subscribe(t, b, "thread.*", ack(true), bus.SubscribeOptions{Name: "observer"})
	if diff := cmp.Diff([]string{"observer", "bidder-c", "bidder-b", "bidder-a"}, ackers(request(t, b, msg("thread.job-7.broadcast")))); diff != "" {
		t.Errorf("Request(thread.job-7.broadcast) acks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"observer"}, ackers(request(t, b, msg("thread.job-7.reply")))); diff != "" {
		t.Errorf("Request(thread.job-7.reply) acks (-want +got):\n%s", diff)
	}
	// Publish reaches all of them too.
	rec := NewRecorder(bus.Ack{Processed: true})
	rec2 := NewRecorder(bus.Ack{Processed: true})
	subscribe(t, b, "thread.job-8.broadcast", rec.Handle, bus.SubscribeOptions{Name: "p1"})
	subscribe(t, b, "thread.job-8.broadcast", rec2.Handle, bus.SubscribeOptions{Name: "p2"})
	res, err := b.Publish(context.Background(), msg("thread.job-8.broadcast"))
	if err != nil || res.Delivered != 3 {
		t.Errorf("Publish(thread.job-8.broadcast) = %+v, %v; want 3 deliveries (p1, p2, observer)", res, err)
	}
	rec.WaitN(t, 1)
	rec2.WaitN(t, 1)
}

// testObserverAndAccept: an observer subscription is outside last match
// wins, and Accept drops what it refuses before delivery.
func testObserverAndAccept(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{DefaultPolicy: bus.ContinueAll})
	subscribe(t, b, "log:", ack(true), bus.SubscribeOptions{Name: "observer", Observer: true,
		Accept: func(m bus.Message) bool { return m.Headers["origin"] != "me" }})
	subscribe(t, b, "log:", ack(true), bus.SubscribeOptions{Name: "peer"})
	if diff := cmp.Diff([]string{"peer", "observer"}, ackers(request(t, b, msg("log:1")))); diff != "" {
		t.Errorf("Request(log:1) acks (-want +got):\n%s", diff)
	}
	m := msg("log:2")
	m.Headers = map[string]string{"origin": "me"}
	if diff := cmp.Diff([]string{"peer"}, ackers(request(t, b, m))); diff != "" {
		t.Errorf("Request(log:2 from me) acks (-want +got):\n%s", diff)
	}
}

// testForget: a backend that can forget a topic's stored messages (an
// optional method faces use to stay bounded) drops its log and retained
// value; the topic then starts afresh.
func testForget(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{Retained: []string{"r:*"}, AppendOnly: []string{"log:*"}})
	f, ok := b.(interface {
		Forget(ctx context.Context, topic string) error
	})
	if !ok {
		t.Skip("backend cannot forget topics")
	}
	ctx := context.Background()
	for _, topic := range []string{"log:1", "log:1", "r:1"} {
		if _, err := b.Publish(ctx, msg(topic)); err != nil {
			t.Fatal(err)
		}
	}
	for _, topic := range []string{"log:1", "r:1"} {
		if err := f.Forget(ctx, topic); err != nil {
			t.Fatalf("Forget(%s) = %v", topic, err)
		}
	}
	n := 0
	if err := b.Replay(ctx, "log:1", 1, func(uint64, bus.Message) bool { n++; return true }); err != nil || n != 0 {
		t.Errorf("Replay(log:1) after Forget = %d messages, %v; want none", n, err)
	}
	if _, ok, err := b.Retained(ctx, "r:1"); ok || err != nil {
		t.Errorf("Retained(r:1) after Forget = %v, %v; want nothing", ok, err)
	}
	res, err := b.Publish(ctx, msg("log:1"))
	if err != nil || res.Offset != 1 {
		t.Errorf("Publish(log:1) after Forget = offset %d, %v; want 1", res.Offset, err)
	}
}

func testPolicies(t *testing.T, newBus NewBus) {
	tests := []struct {
		name          string
		busDefault    bus.Policy
		policy        bus.Policy
		ack           bus.Ack
		wantOlderCall bool
	}{
		{"processed stops by default", "", "", bus.Ack{Processed: true}, false},
		{"not processed goes on", "", bus.StopOnProcessed, bus.Ack{}, true},
		{"stop without processed stops", "", bus.StopOnProcessed, bus.Ack{StopPropagation: true}, false},
		{"onStop ignores processed", "", bus.StopOnStop, bus.Ack{Processed: true}, true},
		{"onStop stops on stop", "", bus.StopOnStop, bus.Ack{StopPropagation: true}, false},
		{"continueAll ignores stop", "", bus.ContinueAll, bus.Ack{Processed: true, StopPropagation: true}, true},
		{"bus-wide default applies", bus.ContinueAll, "", bus.Ack{Processed: true}, true},
		{"subscription overrides bus default", bus.ContinueAll, bus.StopOnProcessed, bus.Ack{Processed: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := open(t, newBus, bus.Options{DefaultPolicy: tt.busDefault})
			older := Processed()
			subscribe(t, b, "p:*", older.Handle, bus.SubscribeOptions{Name: "older", Policy: bus.ContinueAll})
			newer := NewRecorder(tt.ack)
			subscribe(t, b, "p:x", newer.Handle, bus.SubscribeOptions{Name: "newer", Policy: tt.policy})
			res := request(t, b, msg("p:x"))
			if newer.Len() != 1 {
				t.Fatalf("newer subscriber called %d times, want 1", newer.Len())
			}
			if got := older.Len() == 1; got != tt.wantOlderCall {
				t.Errorf("older subscriber called = %v, want %v (acks %v)", got, tt.wantOlderCall, ackers(res))
			}
			if res.Stopped == tt.wantOlderCall {
				t.Errorf("Result.Stopped = %v, want %v", res.Stopped, !tt.wantOlderCall)
			}
		})
	}
}

func testRequestAcks(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{})
	first := NewRecorder(bus.Ack{Processed: false, Message: "seen"})
	second := NewRecorder(bus.Ack{Processed: true, Message: "handled", Result: json.RawMessage(`{"n":1}`)})
	subscribe(t, b, "req:*", second.Handle, bus.SubscribeOptions{Name: "second"})
	subscribe(t, b, "req:one", first.Handle, bus.SubscribeOptions{Name: "first"})

	m := msg("req:one", "text", "hello")
	m.Headers = map[string]string{"sender": "agent.coordinator"}
	res := request(t, b, m)
	want := bus.Result{
		Delivered: 2,
		Acks: []bus.Ack{
			{Subscriber: "first", Message: "seen"},
			{Subscriber: "second", Processed: true, Message: "handled", Result: json.RawMessage(`{"n":1}`)},
		},
		Stopped:   true,
		MessageID: res.MessageID,
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Request result (-want +got):\n%s", diff)
	}
	if res.MessageID == "" {
		t.Errorf("Result.MessageID is empty, want the assigned ID")
	}
	if !res.Processed() {
		t.Errorf("Result.Processed() = false, want true")
	}
	got := first.Messages()[0]
	wantMsg := bus.Message{ID: res.MessageID, Topic: "req:one", Payload: m.Payload, Headers: m.Headers, Attempt: 1}
	if diff := cmp.Diff(wantMsg, got, cmpopts.IgnoreFields(bus.Message{}, "Time"), cmp.Comparer(jsonEqual)); diff != "" {
		t.Errorf("delivered message (-want +got):\n%s", diff)
	}
	if got.Time.IsZero() {
		t.Errorf("delivered message has no Time, want the bus to stamp it")
	}

	none := request(t, b, msg("nobody:home"))
	if none.Delivered != 0 || len(none.Acks) != 0 {
		t.Errorf("Request(nobody:home) = %+v, want nothing delivered", none)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}

func testRequestHandlerFailures(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{})
	ok := Processed()
	subscribe(t, b, "f:*", ok.Handle, bus.SubscribeOptions{Name: "ok"})
	subscribe(t, b, "f:err", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true}, errors.New("disk full")
	}, bus.SubscribeOptions{Name: "failing"})
	subscribe(t, b, "f:panic", func(context.Context, bus.Message) (bus.Ack, error) {
		panic("boom")
	}, bus.SubscribeOptions{Name: "panicking"})

	for _, topic := range []string{"f:err", "f:panic"} {
		t.Run(topic, func(t *testing.T) {
			res := request(t, b, msg(topic))
			if len(res.Acks) != 2 {
				t.Fatalf("Request(%s) acks = %+v, want the failing one then ok", topic, res.Acks)
			}
			if a := res.Acks[0]; a.Processed || a.Error == "" {
				t.Errorf("failing ack = %+v, want Processed false and Error set", a)
			}
			if !res.Acks[1].Processed {
				t.Errorf("walk did not go on to the next subscriber: acks %+v", res.Acks)
			}
			if !res.DeadLettered {
				t.Errorf("Result.DeadLettered = false, want the failed delivery dead-lettered")
			}
		})
	}
	dls, err := b.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, d := range dls {
		got = append(got, d.Subscriber)
	}
	if diff := cmp.Diff([]string{"failing", "panicking"}, got); diff != "" {
		t.Errorf("dead letters by subscriber (-want +got):\n%s", diff)
	}
}

func testRequestTimeout(t *testing.T, newBus NewBus) {
	// A hand-off handler never answers: the requester moves on at the
	// timeout. A cooperative one gives up when its context ends at the
	// timeout, and the requester reports the same ack.
	for _, cooperative := range []bool{false, true} {
		t.Run(fmt.Sprintf("cooperative=%v", cooperative), func(t *testing.T) {
			clock := NewFakeClock(time.Unix(1_700_000_000, 0))
			b := open(t, newBus, bus.Options{Clock: clock})
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			entered := make(chan struct{})
			cancelled := make(chan struct{})
			after := Processed()
			subscribe(t, b, "slow:*", after.Handle, bus.SubscribeOptions{Name: "after"})
			subscribe(t, b, "slow:x", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
				close(entered)
				<-ctx.Done()
				close(cancelled)
				if cooperative {
					return bus.Ack{}, ctx.Err()
				}
				<-release // never answers while the test runs
				return bus.Ack{Processed: true}, nil
			}, bus.SubscribeOptions{Name: "dead", Timeout: 7 * time.Second, Cooperative: cooperative})

			done := make(chan bus.Result, 1)
			go func() {
				res, _ := b.Request(context.Background(), msg("slow:x"))
				done <- res
			}()
			Recv(t, "handler to be called", entered)
			clock.WaitForTimer(t, 7*time.Second)
			clock.Advance(7 * time.Second)
			res := Recv(t, "Request to return after the timeout", done)
			Recv(t, "handler context to be cancelled", cancelled)
			if len(res.Acks) != 2 {
				t.Fatalf("acks = %+v, want the timed-out one then after", res.Acks)
			}
			if a := res.Acks[0]; a.Subscriber != "dead" || a.Processed || !strings.Contains(a.Error, "did not answer within 7s") {
				t.Errorf("timed-out ack = %+v, want subscriber dead, not processed, Error saying it did not answer within 7s", a)
			}
			if a := res.Acks[1]; a.Subscriber != "after" || !a.Processed {
				t.Errorf("second ack = %+v, want processed by after", a)
			}
		})
	}
}

func testRequestRetryDeadLetterReplay(t *testing.T, newBus NewBus) {
	clock := NewFakeClock(time.Unix(1_700_000_000, 0))
	b := open(t, newBus, bus.Options{Clock: clock, MaxAttempts: 3})
	var failing atomic.Bool
	failing.Store(true)
	worker := Processed()
	worker.Respond = func(context.Context, bus.Message) (bus.Ack, error) {
		if failing.Load() {
			return bus.Ack{ShouldRetry: true, RetrySeconds: 2, Message: "busy"}, nil
		}
		return bus.Ack{Processed: true}, nil
	}
	subscribe(t, b, "jobs:*", worker.Handle, bus.SubscribeOptions{Name: "worker"})
	watcher := Processed()
	subscribe(t, b, bus.DeadLetterTopic, watcher.Handle, bus.SubscribeOptions{Name: "watcher"})

	done := make(chan bus.Result, 1)
	go func() {
		res, _ := b.Request(context.Background(), msg("jobs:1"))
		done <- res
	}()
	worker.WaitN(t, 1)
	clock.WaitForTimer(t, 2*time.Second)
	clock.Advance(2*time.Second - time.Millisecond)
	if n := worker.Len(); n != 1 {
		t.Fatalf("handler called %d times before retry_seconds passed, want 1", n)
	}
	clock.Advance(time.Millisecond)
	worker.WaitN(t, 2)
	clock.WaitForTimer(t, 2*time.Second)
	clock.Advance(2 * time.Second)
	res := Recv(t, "Request to give up", done)

	attempts := []int{}
	for _, m := range worker.Messages() {
		attempts = append(attempts, m.Attempt)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if !res.DeadLettered || len(res.Acks) != 1 || res.Acks[0].Processed {
		t.Fatalf("Request result = %+v, want one unprocessed ack and DeadLettered", res)
	}
	dls, err := b.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 {
		t.Fatalf("DeadLetters() = %+v, want one", dls)
	}
	dl := dls[0]
	if dl.ID == "" || dl.Subscriber != "worker" || dl.Pattern != "jobs:*" || dl.Attempts != 3 || dl.Reason == "" || dl.Message.ID != res.MessageID || dl.Message.Topic != "jobs:1" {
		t.Errorf("dead letter = %+v, want worker, jobs:*, 3 attempts, a reason and message %s on jobs:1", dl, res.MessageID)
	}
	announced := watcher.WaitN(t, 1)[0]
	var got bus.DeadLetter
	if err := json.Unmarshal(announced.Payload, &got); err != nil || got.ID != dl.ID {
		t.Errorf("announcement on %s = %s (%v), want dead letter %s", bus.DeadLetterTopic, announced.Payload, err, dl.ID)
	}

	failing.Store(false)
	replayed, err := b.ReplayDeadLetter(context.Background(), dl.ID)
	if err != nil {
		t.Fatalf("ReplayDeadLetter(%s) = %v, want nil", dl.ID, err)
	}
	if len(replayed.Acks) != 1 || replayed.Acks[0].Subscriber != "worker" || !replayed.Acks[0].Processed {
		t.Errorf("ReplayDeadLetter acks = %+v, want processed by worker", replayed.Acks)
	}
	if dls, _ := b.DeadLetters(context.Background()); len(dls) != 0 {
		t.Errorf("DeadLetters() after replay = %+v, want none", dls)
	}
	if _, err := b.ReplayDeadLetter(context.Background(), dl.ID); !errors.Is(err, bus.ErrNotFound) {
		t.Errorf("second ReplayDeadLetter(%s) = %v, want ErrNotFound", dl.ID, err)
	}
}

func testReplayDeadLetterToTopic(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{})
	gone := subscribe(t, b, "mail:*", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{}, errors.New("connection lost")
	}, bus.SubscribeOptions{Name: "gone"})
	res := request(t, b, msg("mail:1", "n", 1))
	if !res.DeadLettered {
		t.Fatalf("Request result = %+v, want DeadLettered", res)
	}
	if err := gone.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	heir := Processed()
	subscribe(t, b, "mail:1", heir.Handle, bus.SubscribeOptions{Name: "heir"})
	dls, _ := b.DeadLetters(context.Background())
	if len(dls) != 1 {
		t.Fatalf("DeadLetters() = %+v, want one", dls)
	}
	replayed, err := b.ReplayDeadLetter(context.Background(), dls[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"heir"}, ackers(replayed)); diff != "" {
		t.Errorf("replay went to (-want +got):\n%s", diff)
	}
	if got := heir.Messages(); len(got) != 1 || got[0].ID != res.MessageID || field(t, got[0], "n") != 1 {
		t.Errorf("heir got %+v, want the original message %s", got, res.MessageID)
	}
}

func testPublishRetry(t *testing.T, newBus NewBus) {
	clock := NewFakeClock(time.Unix(1_700_000_000, 0))
	b := open(t, newBus, bus.Options{Clock: clock, RetryDelay: 3 * time.Second, MaxAttempts: 3})
	rec := Processed()
	rec.Respond = func(_ context.Context, m bus.Message) (bus.Ack, error) {
		if m.Attempt < 3 {
			return bus.Ack{}, fmt.Errorf("attempt %d failed", m.Attempt)
		}
		return bus.Ack{Processed: true}, nil
	}
	subscribe(t, b, "ev:*", rec.Handle, bus.SubscribeOptions{Name: "flaky"})
	if res := publish(t, b, msg("ev:1")); res.Delivered != 1 {
		t.Fatalf("Publish delivered to %d, want 1", res.Delivered)
	}
	rec.WaitN(t, 1)
	clock.WaitForTimer(t, 3*time.Second)
	clock.Advance(3 * time.Second)
	rec.WaitN(t, 2)
	clock.WaitForTimer(t, 3*time.Second)
	clock.Advance(3 * time.Second)
	got := rec.WaitN(t, 3)
	attempts := []int{}
	for _, m := range got {
		attempts = append(attempts, m.Attempt)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	// The next message is handled only once the first is finished, so no
	// dead letter can still be on its way when the check below runs.
	publish(t, b, msg("ev:2"))
	clock.WaitForTimer(t, 3*time.Second)
	clock.Advance(3 * time.Second)
	clock.WaitForTimer(t, 3*time.Second)
	clock.Advance(3 * time.Second)
	rec.WaitN(t, 6)
	if dls, _ := b.DeadLetters(context.Background()); len(dls) != 0 {
		t.Errorf("DeadLetters() = %+v, want none: every message succeeded on attempt 3", dls)
	}
}

func testPublishDeadLetter(t *testing.T, newBus NewBus) {
	clock := NewFakeClock(time.Unix(1_700_000_000, 0))
	b := open(t, newBus, bus.Options{Clock: clock, MaxAttempts: 2})
	rec := NewRecorder(bus.Ack{ShouldRetry: true, RetrySeconds: 0.5, Message: "not now"})
	subscribe(t, b, "ev:*", rec.Handle, bus.SubscribeOptions{Name: "never"})
	m := msg("ev:1")
	m.ID = "ev-1"
	res := publish(t, b, m)
	if res.MessageID != "ev-1" {
		t.Errorf("Publish Result.MessageID = %q, want the given ID ev-1", res.MessageID)
	}
	rec.WaitN(t, 1)
	clock.WaitForTimer(t, 500*time.Millisecond)
	clock.Advance(500 * time.Millisecond)
	rec.WaitN(t, 2)
	var dls []bus.DeadLetter
	WaitFor(t, "the message to be dead-lettered", func() bool {
		dls, _ = b.DeadLetters(context.Background())
		return len(dls) == 1
	})
	if d := dls[0]; d.Message.ID != res.MessageID || d.Attempts != 2 || d.Subscriber != "never" || d.LastAck.Message != "not now" {
		t.Errorf("dead letter = %+v, want message %s after 2 attempts to never, last ack 'not now'", d, res.MessageID)
	}
}

func testPublishPanic(t *testing.T, newBus NewBus) {
	clock := NewFakeClock(time.Unix(1_700_000_000, 0))
	b := open(t, newBus, bus.Options{Clock: clock, RetryDelay: 4 * time.Second, MaxAttempts: 2})
	rec := Processed()
	rec.Respond = func(_ context.Context, m bus.Message) (bus.Ack, error) {
		if field(t, m, "n") == 1 && m.Attempt == 1 {
			panic("first attempt explodes")
		}
		if field(t, m, "n") == 3 {
			panic("always explodes")
		}
		return bus.Ack{Processed: true}, nil
	}
	subscribe(t, b, "boom:*", rec.Handle, bus.SubscribeOptions{Name: "fragile"})
	for n := 1; n <= 3; n++ {
		publish(t, b, msg("boom:x", "n", n))
	}
	rec.WaitN(t, 1)
	clock.WaitForTimer(t, 4*time.Second)
	clock.Advance(4 * time.Second)
	rec.WaitN(t, 4) // 1 again, then 2, then 3
	clock.WaitForTimer(t, 4*time.Second)
	clock.Advance(4 * time.Second)
	got := rec.WaitN(t, 5)
	type delivery struct{ N, Attempt int }
	var order []delivery
	for _, m := range got {
		order = append(order, delivery{int(field(t, m, "n")), m.Attempt})
	}
	want := []delivery{{1, 1}, {1, 2}, {2, 1}, {3, 1}, {3, 2}}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	var dls []bus.DeadLetter
	WaitFor(t, "the always-panicking message to be dead-lettered", func() bool {
		dls, _ = b.DeadLetters(context.Background())
		return len(dls) == 1
	})
	if d := dls[0]; field(t, d.Message, "n") != 3 || d.Attempts != 2 || d.LastAck.Error == "" {
		t.Errorf("dead letter = %+v, want message n=3 after 2 attempts with the panic as error", d)
	}
	// The subscriber still works after its handler panicked.
	publish(t, b, msg("boom:x", "n", 4))
	rec.WaitN(t, 6)
}

func testRetained(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{Retained: []string{"loop:current", "agent:*"}})
	ctx := context.Background()
	if _, ok, err := b.Retained(ctx, "loop:current"); ok || err != nil {
		t.Errorf("Retained(loop:current) before any publish = %v, %v, want false, nil", ok, err)
	}
	publish(t, b, msg("loop:current", "n", 1))
	second := request(t, b, msg("loop:current", "n", 2))
	publish(t, b, msg("agent:w-1", "n", 3))
	got, ok, err := b.Retained(ctx, "loop:current")
	if err != nil || !ok {
		t.Fatalf("Retained(loop:current) = %v, %v, want true, nil", ok, err)
	}
	if got.ID != second.MessageID || field(t, got, "n") != 2 {
		t.Errorf("Retained(loop:current) = %s %s, want the last message %s", got.ID, got.Payload, second.MessageID)
	}
	if got, ok, _ := b.Retained(ctx, "agent:w-1"); !ok || field(t, got, "n") != 3 {
		t.Errorf("Retained(agent:w-1) = %s, %v, want n=3", got.Payload, ok)
	}
	if _, _, err := b.Retained(ctx, "task:1"); err == nil {
		t.Errorf("Retained(task:1) = nil error, want an error: the topic is not retained")
	}
}

func testAppendOnly(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{AppendOnly: []string{"loop:anchor", "issue:*"}})
	ctx := context.Background()
	for i := 1; i <= 5; i++ {
		if res := publish(t, b, msg("loop:anchor", "n", i)); res.Offset != uint64(i) {
			t.Errorf("Publish #%d to loop:anchor: Offset = %d, want %d", i, res.Offset, i)
		}
		if res := publish(t, b, msg(fmt.Sprintf("issue:%d", i%2), "n", i)); res.Offset != uint64((i+1)/2) && i%2 == 1 {
			t.Errorf("Publish #%d to issue:1: Offset = %d, want %d", i, res.Offset, (i+1)/2)
		}
	}
	if res := publish(t, b, msg("plain:x")); res.Offset != 0 {
		t.Errorf("Publish to plain:x: Offset = %d, want 0", res.Offset)
	}
	type item struct {
		Off uint64
		N   float64
	}
	replay := func(topic string, from uint64, limit int) []item {
		t.Helper()
		out := []item{}
		err := b.Replay(ctx, topic, from, func(off uint64, m bus.Message) bool {
			out = append(out, item{off, field(t, m, "n")})
			return len(out) < limit
		})
		if err != nil {
			t.Fatalf("Replay(%s, %d) = %v", topic, from, err)
		}
		return out
	}
	tests := []struct {
		topic string
		from  uint64
		limit int
		want  []item
	}{
		{"loop:anchor", 3, 100, []item{{3, 3}, {4, 4}, {5, 5}}},
		{"loop:anchor", 0, 100, []item{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}}},
		{"loop:anchor", 1, 2, []item{{1, 1}, {2, 2}}},
		{"loop:anchor", 99, 100, []item{}},
		{"issue:0", 1, 100, []item{{1, 2}, {2, 4}}},
		{"issue:never", 1, 100, []item{}},
	}
	for _, tt := range tests {
		got := replay(tt.topic, tt.from, tt.limit)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Replay(%s, from %d, limit %d) (-want +got):\n%s", tt.topic, tt.from, tt.limit, diff)
		}
	}
	if err := b.Replay(ctx, "plain:x", 1, func(uint64, bus.Message) bool { return true }); err == nil {
		t.Errorf("Replay(plain:x) = nil, want an error: the topic is not append-only")
	}
}

// testLimits checks that append-only logs and dead letters keep only the
// newest messages, and that offsets keep counting past the dropped ones.
func testLimits(t *testing.T, newBus NewBus) {
	clock := NewFakeClock(time.Unix(1_700_000_000, 0))
	b := open(t, newBus, bus.Options{Clock: clock, AppendOnly: []string{"loop:anchor"}, MaxLogMessages: 3, MaxDeadLetters: 2, MaxAttempts: 1})
	ctx := context.Background()
	for i := 1; i <= 5; i++ {
		if res := publish(t, b, msg("loop:anchor", "n", i)); res.Offset != uint64(i) {
			t.Errorf("Publish #%d to loop:anchor: Offset = %d, want %d", i, res.Offset, i)
		}
	}
	for _, tt := range []struct {
		from uint64
		want []uint64
	}{{0, []uint64{3, 4, 5}}, {1, []uint64{3, 4, 5}}, {4, []uint64{4, 5}}, {6, nil}} {
		var got []uint64
		err := b.Replay(ctx, "loop:anchor", tt.from, func(off uint64, m bus.Message) bool {
			if n := field(t, m, "n"); n != float64(off) {
				t.Errorf("Replay: message at offset %d has n = %v, want %d", off, n, off)
			}
			got = append(got, off)
			return true
		})
		if err != nil {
			t.Fatalf("Replay(from %d) = %v", tt.from, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Replay(from %d) offsets with 3 kept (-want +got):\n%s", tt.from, diff)
		}
	}

	subscribe(t, b, "mail:*", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{}, errors.New("mailbox full")
	}, bus.SubscribeOptions{Name: "mailer"})
	var ids []string
	for i := 1; i <= 3; i++ {
		res, err := b.Request(ctx, msg(fmt.Sprintf("mail:%d", i)))
		if err != nil || !res.DeadLettered {
			t.Fatalf("Request(mail:%d) = %+v, %v, want dead-lettered", i, res, err)
		}
		ids = append(ids, res.MessageID)
		clock.Advance(time.Second) // dead letters are listed by time
	}
	dls, err := b.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, dl := range dls {
		got = append(got, dl.Message.ID)
	}
	if diff := cmp.Diff(ids[1:], got); diff != "" {
		t.Errorf("DeadLetters() with 2 kept: message ids (-want +got):\n%s", diff)
	}
}

// testFailingDeadLetterWatcher checks that a dead-letter announcement its
// subscriber fails on is not itself kept as a dead letter.
func testFailingDeadLetterWatcher(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{MaxAttempts: 1})
	ctx := context.Background()
	watcher := NewRecorder(bus.Ack{})
	watcher.Respond = func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{}, errors.New("watcher broken")
	}
	subscribe(t, b, bus.DeadLetterTopic, watcher.Handle, bus.SubscribeOptions{Name: "watcher"})
	subscribe(t, b, "mail:*", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{}, errors.New("mailbox full")
	}, bus.SubscribeOptions{Name: "mailer"})
	var ids []string
	for i := 1; i <= 2; i++ {
		res, err := b.Request(ctx, msg(fmt.Sprintf("mail:%d", i)))
		if err != nil || !res.DeadLettered {
			t.Fatalf("Request(mail:%d) = %+v, %v, want dead-lettered", i, res, err)
		}
		ids = append(ids, res.MessageID)
	}
	// The watcher takes its deliveries one at a time: once it has the
	// second, the failure of the first is fully handled.
	watcher.WaitN(t, 2)
	dls, err := b.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, dl := range dls {
		got = append(got, dl.Message.ID)
	}
	if diff := cmp.Diff(ids, got); diff != "" {
		t.Errorf("DeadLetters() message ids (-want +got):\n%s", diff)
	}
}

func testIdempotency(t *testing.T, newBus NewBus) {
	clock := NewFakeClock(time.Unix(1_700_000_000, 0))
	b := open(t, newBus, bus.Options{Clock: clock, IdempotencyWindow: time.Minute, AppendOnly: []string{"idem:log"}})
	rec := Processed()
	subscribe(t, b, "idem:*", rec.Handle, bus.SubscribeOptions{})
	keyed := func(topic, key string) bus.Message {
		m := msg(topic)
		m.IdempotencyKey = key
		return m
	}
	steps := []struct {
		name    string
		publish bool
		m       bus.Message
		advance time.Duration
		wantDup bool
	}{
		{"first", false, keyed("idem:a", "k1"), 0, false},
		{"repeat by request", false, keyed("idem:a", "k1"), 0, true},
		{"repeat by publish", true, keyed("idem:a", "k1"), 0, true},
		{"same key other topic", false, keyed("idem:b", "k1"), 0, false},
		{"other key", false, keyed("idem:a", "k2"), 0, false},
		{"no key twice", false, msg("idem:a"), 0, false},
		{"no key twice", false, msg("idem:a"), 0, false},
		{"inside window", false, keyed("idem:a", "k1"), 59 * time.Second, true},
		{"window passed", false, keyed("idem:a", "k1"), time.Second, false},
		{"append-only first", false, keyed("idem:log", "x"), 0, false},
		{"append-only repeat", false, keyed("idem:log", "x"), 0, true},
	}
	delivered := 0
	for _, s := range steps {
		clock.Advance(s.advance)
		var res bus.Result
		if s.publish {
			res = publish(t, b, s.m)
		} else {
			res = request(t, b, s.m)
		}
		if res.Duplicate != s.wantDup {
			t.Errorf("%s: Duplicate = %v, want %v", s.name, res.Duplicate, s.wantDup)
		}
		if res.Duplicate && res.Delivered != 0 {
			t.Errorf("%s: duplicate delivered to %d, want 0", s.name, res.Delivered)
		}
		if !s.wantDup {
			delivered++
		}
	}
	if got := rec.Len(); got != delivered {
		t.Errorf("subscriber got %d messages, want %d", got, delivered)
	}
	n := 0
	_ = b.Replay(context.Background(), "idem:log", 1, func(uint64, bus.Message) bool { n++; return true })
	if n != 1 {
		t.Errorf("idem:log holds %d messages, want 1: duplicates are not stored", n)
	}
}

func testOrdering(t *testing.T, newBus NewBus) {
	const publishers, each = 4, 300
	b := open(t, newBus, bus.Options{})
	rec := Processed()
	subscribe(t, b, "order:*", rec.Handle, bus.SubscribeOptions{})
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				// Each publisher alternates topics: order holds across them.
				topic := fmt.Sprintf("order:%d", n%2)
				if _, err := b.Publish(context.Background(), msg(topic, "p", p, "n", n)); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := rec.WaitN(t, publishers*each)
	next := make([]int, publishers)
	for _, m := range got {
		p, n := int(field(t, m, "p")), int(field(t, m, "n"))
		if n != next[p] {
			t.Fatalf("publisher %d: got message %d, want %d", p, n, next[p])
		}
		next[p]++
	}
}

func testSlowSubscriber(t *testing.T, newBus NewBus) {
	const n = 10
	b := open(t, newBus, bus.Options{EnqueueTimeout: 20 * time.Millisecond})
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	slow := Processed()
	slow.Respond = func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		<-release
		return bus.Ack{Processed: true}, nil
	}
	subscribe(t, b, "work:*", slow.Handle, bus.SubscribeOptions{Name: "slow", QueueSize: 1})
	fast := Processed()
	subscribe(t, b, "work:x", fast.Handle, bus.SubscribeOptions{Name: "fast"})
	published := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := b.Publish(context.Background(), msg("work:x", "n", i)); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	// The fast subscriber gets everything while the slow one is stuck.
	fast.WaitN(t, n)
	if got := slow.Len(); got > 1 {
		t.Fatalf("slow subscriber handled %d messages while blocked, want at most 1", got)
	}
	releaseOnce.Do(func() { close(release) })
	if err := Recv(t, "the publisher to finish", published); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	// Nothing is lost: each message was handled by slow or dead-lettered.
	WaitFor(t, "every message to reach slow or the dead letters", func() bool {
		dls, _ := b.DeadLetters(context.Background())
		dead := 0
		for _, d := range dls {
			if d.Subscriber == "slow" {
				dead++
			}
		}
		return slow.Len()+dead == n
	})
}

func testQueuedAfterUnsubscribe(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{})
	gate := make(chan struct{})
	rec := Processed()
	rec.Respond = func(context.Context, bus.Message) (bus.Ack, error) {
		<-gate
		return bus.Ack{Processed: true}, nil
	}
	s := subscribe(t, b, "q:*", rec.Handle, bus.SubscribeOptions{QueueSize: 10})
	for i := range 4 {
		publish(t, b, msg("q:1", "n", i))
	}
	rec.WaitN(t, 1)
	if err := s.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if res := publish(t, b, msg("q:1", "n", 99)); res.Delivered != 0 {
		t.Errorf("Publish after Unsubscribe delivered to %d, want 0", res.Delivered)
	}
	close(gate)
	got := rec.WaitN(t, 4)
	for i, m := range got {
		if n := field(t, m, "n"); n != float64(i) {
			t.Errorf("message %d has n=%v, want %d", i, n, i)
		}
	}
}

func testUnsubscribe(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{})
	s := subscribe(t, b, "u:*", ack(true), bus.SubscribeOptions{Name: "u"})
	if s.Pattern() != "u:*" || s.Name() != "u" {
		t.Errorf("Pattern(), Name() = %q, %q, want u:*, u", s.Pattern(), s.Name())
	}
	unnamed := subscribe(t, b, "v:*", ack(true), bus.SubscribeOptions{})
	if unnamed.Name() == "" {
		t.Errorf("Name() of an unnamed subscription is empty, want a generated name")
	}
	if err := s.Unsubscribe(); err != nil {
		t.Fatalf("Unsubscribe() = %v, want nil", err)
	}
	if res := request(t, b, msg("u:1")); res.Delivered != 0 {
		t.Errorf("Request after Unsubscribe delivered to %d, want 0", res.Delivered)
	}
	if err := s.Unsubscribe(); !errors.Is(err, bus.ErrNotFound) {
		t.Errorf("second Unsubscribe() = %v, want ErrNotFound", err)
	}
}

func testValidation(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{})
	ctx := context.Background()
	subs := []struct {
		name    string
		pattern string
		h       bus.Handler
		opts    bus.SubscribeOptions
	}{
		{"empty pattern", "", ack(true), bus.SubscribeOptions{}},
		{"unclosed class", "a:[b", ack(true), bus.SubscribeOptions{}},
		{"space", "a: b", ack(true), bus.SubscribeOptions{}},
		{"nil handler", "a:*", nil, bus.SubscribeOptions{}},
		{"unknown policy", "a:*", ack(true), bus.SubscribeOptions{Policy: "firstOnly"}},
		{"huge queue", "a:*", ack(true), bus.SubscribeOptions{QueueSize: bus.MaxQueueSize + 1}},
	}
	for _, s := range subs {
		if _, err := b.Subscribe(ctx, s.pattern, s.h, s.opts); err == nil {
			t.Errorf("Subscribe(%s) = nil error, want an error", s.name)
		}
	}
	for _, topic := range []string{"", "a:*", "a b", "a:[x]"} {
		if _, err := b.Publish(ctx, bus.Message{Topic: topic}); err == nil {
			t.Errorf("Publish(%q) = nil error, want an error", topic)
		}
		if _, err := b.Request(ctx, bus.Message{Topic: topic}); err == nil {
			t.Errorf("Request(%q) = nil error, want an error", topic)
		}
	}
}

func testClosed(t *testing.T, newBus NewBus) {
	b := open(t, newBus, bus.Options{})
	if err := b.Close(); err != nil {
		t.Fatalf("Close() = %v, want nil", err)
	}
	ctx := context.Background()
	if _, err := b.Publish(ctx, msg("a:1")); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
	if _, err := b.Request(ctx, msg("a:1")); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Request after Close = %v, want ErrClosed", err)
	}
	if _, err := b.Subscribe(ctx, "a:*", ack(true), bus.SubscribeOptions{}); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Subscribe after Close = %v, want ErrClosed", err)
	}
}

func testConcurrent(t *testing.T, newBus NewBus) {
	const publishers, each, churners, rounds = 4, 200, 4, 50
	b := open(t, newBus, bus.Options{})
	var pubs atomic.Int64
	stable := Processed()
	stable.Respond = func(_ context.Context, m bus.Message) (bus.Ack, error) {
		if m.Headers["kind"] == "pub" {
			pubs.Add(1)
		}
		return bus.Ack{}, nil
	}
	subscribe(t, b, "conc:*", stable.Handle, bus.SubscribeOptions{Name: "stable"})
	ctx := context.Background()
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				m := msg("conc:x", "p", p, "n", n)
				m.Headers = map[string]string{"kind": "pub"}
				if _, err := b.Publish(ctx, m); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
				if _, err := b.Request(ctx, msg("conc:req")); err != nil {
					t.Errorf("Request: %v", err)
					return
				}
			}
		}()
	}
	for c := range churners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			patterns := []string{"conc:x", "conc:", "conc:re?", "other:*"}
			for r := range rounds {
				s, err := b.Subscribe(ctx, patterns[(c+r)%len(patterns)], ack(r%2 == 0), bus.SubscribeOptions{})
				if err != nil {
					t.Errorf("Subscribe: %v", err)
					return
				}
				if err := s.Unsubscribe(); err != nil {
					t.Errorf("Unsubscribe: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	WaitFor(t, fmt.Sprintf("stable to get all %d publishes", publishers*each), func() bool {
		return pubs.Load() == publishers*each
	})
	seen := map[[2]float64]bool{}
	for _, m := range stable.Messages() {
		if m.Headers["kind"] == "pub" {
			key := [2]float64{field(t, m, "p"), field(t, m, "n")}
			if seen[key] {
				t.Fatalf("message %v delivered twice", key)
			}
			seen[key] = true
		}
	}
	if len(seen) != publishers*each {
		t.Errorf("stable got %d distinct publishes, want %d", len(seen), publishers*each)
	}
}
