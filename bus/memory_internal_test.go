package bus

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newTestMemory(t *testing.T, opts Options) *Memory {
	t.Helper()
	b, err := NewMemory(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a failure guard only
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseDeadLettersQueued(t *testing.T) {
	b := newTestMemory(t, Options{})
	ctx := context.Background()
	entered := make(chan struct{}, 10)
	_, err := b.Subscribe(ctx, "q:*", func(ctx context.Context, m Message) (Ack, error) {
		entered <- struct{}{}
		<-ctx.Done() // holds the worker until Close cancels it
		return Ack{}, ctx.Err()
	}, SubscribeOptions{Name: "stuck", QueueSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := b.Publish(ctx, Message{Topic: "q:x", ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	<-entered
	if err := b.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	dls, _ := b.DeadLetters(ctx)
	var ids []string
	for _, d := range dls {
		ids = append(ids, d.Message.ID+":"+d.Reason)
	}
	// Message 0 was in the handler when the bus closed; 1-3 were queued.
	want := []string{"0:bus closed while waiting to retry", "1:bus closed before delivery", "2:bus closed before delivery", "3:bus closed before delivery"}
	if strings.Join(ids, "|") != strings.Join(want, "|") {
		t.Errorf("dead letters after Close = %v, want %v", ids, want)
	}
}

func TestEnqueueGivesUp(t *testing.T) {
	ctx := context.Background()
	b := newTestMemory(t, Options{EnqueueTimeout: time.Hour})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before Close, which waits for handlers
	_, err := b.Subscribe(ctx, "q:*", func(ctx context.Context, m Message) (Ack, error) {
		<-release
		return Ack{Processed: true}, nil
	}, SubscribeOptions{Name: "slow", QueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Fill the worker and the queue, then publish with a cancelled context.
	for range 2 {
		b.Publish(ctx, Message{Topic: "q:x"})
	}
	waitFor(t, "the queue to fill", func() bool {
		return b.snap.Load().subs[0].q.len() == 1
	})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	res, err := b.Publish(cancelled, Message{Topic: "q:x", ID: "late"})
	if err != nil || !res.DeadLettered || res.Delivered != 0 {
		t.Fatalf("Publish with a cancelled context on a full queue = %+v, %v, want dead-lettered", res, err)
	}
	dls, _ := b.DeadLetters(ctx)
	if len(dls) != 1 || dls[0].Message.ID != "late" || !strings.Contains(dls[0].Reason, "publisher gave up") {
		t.Errorf("dead letters = %+v, want the late message with the publisher's reason", dls)
	}
}

func TestRouteCacheBounded(t *testing.T) {
	b := newTestMemory(t, Options{})
	ctx := context.Background()
	count := 0
	_, err := b.Subscribe(ctx, "t:*", func(context.Context, Message) (Ack, error) {
		count++
		return Ack{Processed: true}, nil
	}, SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = maxCachedRoutes + 100
	for i := range n {
		res, err := b.Request(ctx, Message{Topic: fmt.Sprintf("t:%d", i)})
		if err != nil || res.Delivered != 1 {
			t.Fatalf("Request(t:%d) = %+v, %v, want delivered once", i, res, err)
		}
	}
	got := 0
	b.snap.Load().routes.Range(func(any, any) bool { got++; return true })
	if got != maxCachedRoutes {
		t.Errorf("cached routes = %d, want the cap %d", got, maxCachedRoutes)
	}
	if count != n {
		t.Errorf("handler called %d times, want %d", count, n)
	}
}

func TestRouteCacheInvalidated(t *testing.T) {
	b := newTestMemory(t, Options{})
	ctx := context.Background()
	first, _ := b.Subscribe(ctx, "a:*", func(context.Context, Message) (Ack, error) { return Ack{Processed: true}, nil }, SubscribeOptions{Name: "first"})
	if res, _ := b.Request(ctx, Message{Topic: "a:1"}); res.Delivered != 1 {
		t.Fatalf("Request(a:1) delivered to %d, want 1", res.Delivered)
	}
	b.Subscribe(ctx, "a:1", func(context.Context, Message) (Ack, error) { return Ack{}, nil }, SubscribeOptions{Name: "second"})
	if res, _ := b.Request(ctx, Message{Topic: "a:1"}); res.Delivered != 2 {
		t.Errorf("Request(a:1) after a new subscription delivered to %d, want 2: the cached route must be dropped", res.Delivered)
	}
	first.Unsubscribe()
	if res, _ := b.Request(ctx, Message{Topic: "a:1"}); res.Delivered != 1 || res.Acks[0].Subscriber != "second" {
		t.Errorf("Request(a:1) after Unsubscribe = %+v, want only second", res)
	}
}

func TestReplayDeadLetterUnknown(t *testing.T) {
	b := newTestMemory(t, Options{})
	_, err := b.ReplayDeadLetter(context.Background(), "dl-nope")
	if err == nil || !strings.Contains(err.Error(), "weave bus dlq") {
		t.Errorf("ReplayDeadLetter(unknown) = %v, want an error pointing to weave bus dlq", err)
	}
}

// TestUnsubscribeRaceLosesNothing publishes while unsubscribing: every
// message Publish counted as delivered must reach the handler, whether the
// worker or a publisher (rescueIfExited) delivers it.
func TestUnsubscribeRaceLosesNothing(t *testing.T) {
	b := newTestMemory(t, Options{})
	ctx := context.Background()
	for round := range 200 {
		var handled atomic.Int64
		sub, err := b.Subscribe(ctx, "race:*", func(context.Context, Message) (Ack, error) {
			handled.Add(1)
			return Ack{Processed: true}, nil
		}, SubscribeOptions{QueueSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		var delivered atomic.Int64
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					res, err := b.Publish(ctx, Message{Topic: "race:x"})
					if err != nil {
						t.Error(err)
						return
					}
					delivered.Add(int64(res.Delivered))
				}
			}()
		}
		if err := sub.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		waitFor(t, fmt.Sprintf("round %d: all %d delivered messages handled", round, delivered.Load()), func() bool {
			return handled.Load() == delivered.Load()
		})
	}
}

func TestRescueAfterWorkerExit(t *testing.T) {
	b := newTestMemory(t, Options{})
	ctx := context.Background()
	got := make(chan string, 1)
	sub, err := b.Subscribe(ctx, "r:*", func(_ context.Context, m Message) (Ack, error) {
		got <- m.ID
		return Ack{Processed: true}, nil
	}, SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := sub.(*memSub)
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the worker to exit", s.exited.Load)
	// What a publisher that passed its removed check just before removal
	// would have left behind.
	s.q.push(delivery{m: Message{ID: "straggler", Topic: "r:x"}}, true)
	s.rescueIfExited()
	select {
	case id := <-got:
		if id != "straggler" {
			t.Errorf("rescued message %q, want straggler", id)
		}
	default:
		t.Errorf("rescueIfExited() did not deliver the message left in the queue")
	}
}

func TestPublishDeliveryDeadline(t *testing.T) {
	b := newTestMemory(t, Options{MaxAttempts: 1})
	ctx := context.Background()
	deadlines := make(chan bool, 2)
	h := func(ctx context.Context, m Message) (Ack, error) {
		_, ok := ctx.Deadline()
		deadlines <- ok
		return Ack{Processed: true}, nil
	}
	b.Subscribe(ctx, "d:x", h, SubscribeOptions{Name: "remote", Timeout: time.Minute})
	b.Subscribe(ctx, "d:*", h, SubscribeOptions{Name: "local"})
	b.Publish(ctx, Message{Topic: "d:x"})
	got := map[bool]int{}
	for range 2 {
		select {
		case ok := <-deadlines:
			got[ok]++
		case <-time.After(time.Minute):
			t.Fatal("handlers were not called")
		}
	}
	if got[true] != 1 || got[false] != 1 {
		t.Errorf("deliveries with a deadline: %d, without: %d, want 1 and 1", got[true], got[false])
	}
}

// A subscription's memory follows what is queued, not the queue's
// capacity: 500 idle subscriptions allowed 4,096 messages each cost a few
// kilobytes apiece (a buffered channel took memory for all 4,096 up
// front).
func TestSubscriptionMemoryFollowsUse(t *testing.T) {
	b := newTestMemory(t, Options{QueueSize: 4096})
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	const n = 500
	var subs []Subscription
	for i := range n {
		sub, err := b.Subscribe(context.Background(), "m:"+strconv.Itoa(i), func(context.Context, Message) (Ack, error) {
			return Ack{Processed: true}, nil
		}, SubscribeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	per := (int64(heap()) - int64(before)) / n
	t.Logf("idle subscription with a 4096-message queue: %d bytes", per)
	if per > 16<<10 {
		t.Errorf("an idle subscription costs %d bytes, want under 16 KiB whatever its queue size", per)
	}
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
}

// The store holds at most MaxStoreBytes: a flooding append-only topic drops
// its own oldest messages to fit, a new topic takes room from other logs, retained messages are never dropped (a retained topic that cannot
// fit is refused with the key to raise), and Forget gives the bytes back.
func TestStoreBytesAreBounded(t *testing.T) {
	opts := DefaultOptions()
	opts.MaxStoreBytes = 64 << 10
	b, err := NewMemory(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	payload := []byte(`"` + strings.Repeat("x", 1000) + `"`)
	held := func() (int64, int) {
		b.storeMu.Lock()
		defer b.storeMu.Unlock()
		n := 0
		if l := b.logs["loop:trace"]; l != nil {
			n = l.n
		}
		return b.storeBytes, n
	}
	for i := range 500 {
		if _, err := b.Publish(ctx, Message{Topic: "loop:trace", Payload: payload}); err != nil {
			t.Fatalf("append %d to a topic that can drop its oldest: %v", i, err)
		}
	}
	bytes, kept := held()
	if bytes > opts.MaxStoreBytes || kept >= 500 || kept == 0 {
		t.Fatalf("after 500 KB of appends the store holds %d bytes in %d messages, want at most %d bytes and the oldest dropped", bytes, kept, opts.MaxStoreBytes)
	}
	if _, err := b.Publish(ctx, Message{Topic: "issue:1", Payload: payload}); err != nil {
		t.Fatalf("a new append-only topic while the store is full: %v, want room taken from another log", err)
	}
	dls, err := b.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) == 0 || !strings.Contains(dls[len(dls)-1].Reason, "bus.max_store_bytes") || dls[len(dls)-1].Message.Topic != "loop:trace" {
		t.Errorf("no dead-letter notice names the dropped messages and the limit: %+v", dls)
	}
	if len(dls) > 0 {
		if _, err := b.ReplayDeadLetter(ctx, dls[len(dls)-1].ID); err == nil || !strings.Contains(err.Error(), "nothing to replay") {
			t.Errorf("replaying a drop notice = %v, want a refusal: its payloads are gone", err)
		}
	}
	if bytes, now := held(); now != kept-1 || bytes > opts.MaxStoreBytes {
		t.Errorf("loop:trace kept %d messages (%d bytes held), want one fewer than %d", now, bytes, kept)
	}
	big := []byte(`"` + strings.Repeat("y", int(opts.MaxStoreBytes)) + `"`)
	if _, err := b.Publish(ctx, Message{Topic: "loop:current", Payload: big}); err == nil || !strings.Contains(err.Error(), "bus.max_store_bytes") {
		t.Errorf("a retained message larger than the whole store = %v, want a refusal naming bus.max_store_bytes", err)
	}
	if _, now := held(); now != kept-1 {
		t.Errorf("a refused publish dropped messages: loop:trace has %d, want %d", now, kept-1)
	}
	for _, topic := range []string{"loop:trace", "issue:1"} {
		if err := b.Forget(ctx, topic); err != nil {
			t.Fatal(err)
		}
	}
	if bytes, _ := held(); bytes != 0 {
		t.Errorf("after Forget the store holds %d bytes, want 0", bytes)
	}
}

// A log in chunks keeps the last limit messages with their offsets, across
// chunk boundaries, and a view taken earlier reads the same messages
// however the log goes on.
func TestLogKeepsTheLastMessagesInChunks(t *testing.T) {
	l := memLog{first: 1} // as the store makes it
	const limit = 2*logChunk + 100
	msg := func(i int) Message { return Message{ID: strconv.Itoa(i), Payload: []byte(`1`)} }
	for i := 1; i <= 3*logChunk; i++ {
		if off, _ := l.add(msg(i), limit); off != uint64(i) {
			t.Fatalf("add %d returned offset %d", i, off)
		}
	}
	if l.n != limit || l.first != uint64(3*logChunk-limit+1) || l.front().ID != strconv.Itoa(3*logChunk-limit+1) {
		t.Fatalf("log holds %d from %d (front %s), want %d from %d", l.n, l.first, l.front().ID, limit, 3*logChunk-limit+1)
	}
	if want := int64(limit) * storedSize(msg(1)); l.bytes > want+int64(limit)*8 || l.bytes <= 0 {
		t.Errorf("log bytes = %d, want about %d", l.bytes, want)
	}
	read := func(v logView) []string {
		var ids []string
		v.each(func(off uint64, m Message) bool {
			if m.ID != strconv.FormatUint(off, 10) {
				t.Fatalf("offset %d holds message %s", off, m.ID)
			}
			ids = append(ids, m.ID)
			return true
		})
		return ids
	}
	v := l.view(0)
	for _, from := range []uint64{0, l.first, l.first + 1, uint64(2 * logChunk), uint64(2*logChunk + 1), uint64(3 * logChunk)} {
		want := 3*logChunk - int(max(from, l.first)) + 1
		if got := read(l.view(from)); len(got) != want || got[0] != strconv.FormatUint(max(from, l.first), 10) {
			t.Errorf("view from %d read %d messages starting %v, want %d from %d", from, len(got), got[:min(1, len(got))], want, max(from, l.first))
		}
	}
	if got := read(l.view(uint64(3*logChunk + 1))); len(got) != 0 {
		t.Errorf("a view from past the end read %v", got)
	}
	// The log goes on: the view still reads what it held.
	for i := 3*logChunk + 1; i <= 5*logChunk; i++ {
		l.add(msg(i), limit)
	}
	if got := read(v); len(got) != limit || got[0] != strconv.Itoa(3*logChunk-limit+1) {
		t.Errorf("an earlier view read %d messages from %v, want its %d", len(got), got[:1], limit)
	}
	if len(l.chunks) > limit/logChunk+2 {
		t.Errorf("log keeps %d chunks for %d messages", len(l.chunks), limit)
	}
	l.drop(l.n)
	if l.n != 0 || l.bytes != 0 || l.first != uint64(5*logChunk+1) {
		t.Errorf("after dropping all: n %d, bytes %d, first %d", l.n, l.bytes, l.first)
	}
	if off, _ := l.add(msg(5*logChunk+1), limit); off != uint64(5*logChunk+1) {
		t.Errorf("add after dropping all returned offset %d", off)
	}
}
