package bus

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Subscribe implements Bus.
func (b *Memory) Subscribe(ctx context.Context, pat string, h Handler, opts SubscribeOptions) (Subscription, error) {
	cp, err := compilePattern(pat)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("subscribe to %q: nil handler", pat)
	}
	policy, err := ParsePolicy(string(opts.Policy))
	if err != nil {
		return nil, fmt.Errorf("subscribe to %q: %w", pat, err)
	}
	if policy == "" {
		policy = b.opts.DefaultPolicy
	}
	size := opts.QueueSize
	if size <= 0 {
		size = b.opts.QueueSize
	}
	if size > MaxQueueSize {
		return nil, fmt.Errorf("subscribe to %q: queue size %d is above the maximum of %d", pat, size, MaxQueueSize)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = b.opts.RequestTimeout
	}
	s := &memSub{
		bus:          b,
		pat:          cp,
		h:            h,
		name:         opts.Name,
		policy:       policy,
		timeout:      timeout,
		q:            newQueue(size),
		asyncTimeout: opts.Timeout,
		cooperative:  opts.Cooperative,
		observer:     opts.Observer,
		accept:       opts.Accept,
		removedCh:    make(chan struct{}),
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	b.nextSub++
	if s.name == "" {
		s.name = "sub-" + strconv.FormatUint(b.nextSub, 10)
	}
	b.subs = append(b.subs, s)
	b.publishSnapshot()
	b.wg.Add(1)
	go s.run()
	return s, nil
}

// publishSnapshot installs a snapshot of b.subs; b.mu must be held.
func (b *Memory) publishSnapshot() {
	subs := make([]*memSub, len(b.subs))
	copy(subs, b.subs)
	b.snap.Store(newSnapshot(subs))
}

func (b *Memory) unsubscribe(s *memSub) error {
	b.mu.Lock()
	i := -1
	for j, x := range b.subs {
		if x == s {
			i = j
			break
		}
	}
	if i < 0 {
		b.mu.Unlock()
		return fmt.Errorf("unsubscribe %s from %q: subscription already removed: %w", s.name, s.pat.raw, ErrNotFound)
	}
	b.subs = append(b.subs[:i:i], b.subs[i+1:]...)
	b.publishSnapshot()
	b.mu.Unlock()
	s.stop()
	return nil
}

type memSub struct {
	bus     *Memory
	pat     pattern
	h       Handler
	name    string
	policy  Policy
	timeout time.Duration
	// asyncTimeout is SubscribeOptions.Timeout as given: the deadline of
	// the context of queued deliveries, none when zero.
	asyncTimeout time.Duration
	cooperative  bool               // SubscribeOptions.Cooperative
	observer     bool               // SubscribeOptions.Observer
	accept       func(Message) bool // SubscribeOptions.Accept
	q            *queue

	removed atomic.Bool
	// exited is set by the worker once it has drained its queue after
	// removal; a publisher that sent after that delivers what it left.
	exited    atomic.Bool
	removedCh chan struct{}
	stopOnce  sync.Once

	// Owned by the worker goroutine.
	stopping bool
	panicMsg string
}

func (s *memSub) Pattern() string    { return s.pat.raw }
func (s *memSub) Name() string       { return s.name }
func (s *memSub) Unsubscribe() error { return s.bus.unsubscribe(s) }

func (s *memSub) stop() {
	s.stopOnce.Do(func() {
		s.removed.Store(true)
		close(s.removedCh)
		s.q.push(delivery{stop: true}, true)
	})
}

type enqueueOutcome uint8

const (
	skipped enqueueOutcome = iota
	enqueued
	deadLettered
)

func (s *memSub) enqueue(ctx context.Context, m *Message) enqueueOutcome {
	if s.removed.Load() {
		return skipped
	}
	if s.q.push(delivery{m: *m}, false) {
		s.rescueIfExited()
		return enqueued
	}
	return s.enqueueSlow(ctx, m)
}

// rescueIfExited delivers, on the publisher's goroutine, messages sent to a
// queue whose worker has already finished. It happens only when a publish
// races with Unsubscribe or Close.
func (s *memSub) rescueIfExited() {
	if !s.exited.Load() {
		return
	}
	for {
		d, ok := s.q.pop()
		if !ok {
			return
		}
		if !d.stop {
			s.rescue(&d.m)
		}
	}
}

func (s *memSub) enqueueSlow(ctx context.Context, m *Message) enqueueOutcome {
	d := delivery{m: *m}
	b := s.bus
	if noWait(ctx) {
		b.deadLetter(s, *m, fmt.Sprintf("queue full: subscriber %s has %d messages waiting and the publisher does not wait; make its handler faster or raise its queue size", s.name, s.q.limit), 0, Ack{})
		return deadLettered
	}
	timeout := b.clock.After(b.opts.EnqueueTimeout)
	for {
		select {
		case <-s.q.room:
			if s.q.push(d, false) {
				if s.q.hasRoom() {
					signal(s.q.room) // another publisher may be waiting
				}
				s.rescueIfExited()
				return enqueued
			}
			continue
		case <-timeout:
			b.deadLetter(s, *m, fmt.Sprintf("queue full: subscriber %s took no message for %s; make its handler faster or raise its queue size", s.name, b.opts.EnqueueTimeout), 0, Ack{})
		case <-b.ctx.Done():
			b.deadLetter(s, *m, "bus closed before the message was queued", 0, Ack{})
		case <-ctx.Done():
			b.deadLetter(s, *m, fmt.Sprintf("publisher gave up waiting for room in the queue: %v", ctx.Err()), 0, Ack{})
		}
		return deadLettered
	}
}

// run is the subscription's worker: it delivers queued messages in order.
// The delivery in hand lives here so that a handler panic, recovered in
// serve, can be handled as a failed attempt of that delivery.
func (s *memSub) run() {
	defer s.bus.wg.Done()
	var cur delivery
	for !s.serve(&cur) {
	}
}

// serve delivers until the subscription is gone and drained (true). A
// handler panic ends it early (false) with panicMsg set; the next call
// treats the panic as a failed attempt and goes on. The recover sits here,
// not around each handler call, to keep it off the per-message path.
func (s *memSub) serve(cur *delivery) (done bool) {
	defer func() {
		if r := recover(); r != nil {
			s.panicMsg = fmt.Sprintf("handler of %s panicked: %v", s.name, r)
			done = false
		}
	}()
	if s.panicMsg != "" {
		ack := Ack{Subscriber: s.name, Error: s.panicMsg}
		s.panicMsg = ""
		s.retry(&cur.m, ack)
	}
	if s.stopping {
		s.drain(cur)
		return true
	}
	for {
		d, ok := s.q.pop()
		if !ok {
			<-s.q.ready
			continue
		}
		*cur = d
		if cur.stop {
			s.stopping = true
			s.drain(cur)
			return true
		}
		s.handle(&cur.m)
	}
}

// drain delivers what is left once the subscription is gone. A publisher
// that passed its removed check before removal may still send; once exited
// is set, such a publisher delivers what it sent itself (rescueIfExited),
// and the second pass catches sends that came in between.
func (s *memSub) drain(cur *delivery) {
	s.drainOnce(cur)
	s.exited.Store(true)
	s.drainOnce(cur)
}

func (s *memSub) drainOnce(cur *delivery) {
	for {
		d, ok := s.q.pop()
		if !ok {
			return
		}
		*cur = d
		if !cur.stop {
			s.handle(&cur.m)
		}
	}
}

// rescue delivers, on a publisher's goroutine, a message left in the queue
// of a finished worker; a panic there only fails that delivery.
func (s *memSub) rescue(m *Message) {
	defer func() {
		if r := recover(); r != nil {
			s.bus.deadLetter(s, *m, fmt.Sprintf("handler of %s panicked: %v", s.name, r), m.Attempt, Ack{})
		}
	}()
	s.handle(m)
}

// handle delivers a dequeued message: attempt 1 inline, retries if needed.
func (s *memSub) handle(m *Message) {
	b := s.bus
	if b.closed.Load() {
		b.deadLetter(s, *m, "bus closed before delivery", 0, Ack{})
		return
	}
	m.Attempt = 1
	a, err := s.deliver(m)
	if err == nil && a.Error == "" && !a.ShouldRetry {
		return
	}
	s.retry(m, s.settle(a, err))
}

// deliver calls the handler for a queued message. Only subscriptions with
// their own Timeout get a deadline: it costs a timer per message.
func (s *memSub) deliver(m *Message) (Ack, error) {
	if s.asyncTimeout <= 0 {
		return s.h(s.bus.ctx, *m)
	}
	ctx, cancel := context.WithTimeout(s.bus.ctx, s.asyncTimeout)
	defer cancel()
	return s.h(ctx, *m)
}

// settle turns a handler's answer into the ack the bus acts on.
func (s *memSub) settle(a Ack, err error) Ack {
	if err != nil {
		a.Processed = false
		a.Error = err.Error()
	}
	if a.Subscriber == "" {
		a.Subscriber = s.name
	}
	return a
}
