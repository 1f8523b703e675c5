package bus

import (
	"context"
	"fmt"
)

// Request implements Bus.
func (b *Memory) Request(ctx context.Context, m Message) (res Result, err error) {
	r, err := b.prepare(&m, true, &res)
	if r == nil {
		return res, err
	}
	return b.walk(ctx, m, r.subs, res)
}

func (b *Memory) walk(ctx context.Context, m Message, subs []*memSub, res Result) (Result, error) {
	for _, s := range subs {
		if s.removed.Load() || (s.accept != nil && !s.accept(m)) {
			continue
		}
		ack, dead, err := s.request(ctx, m)
		res.Delivered++
		res.Acks = append(res.Acks, ack)
		res.DeadLettered = res.DeadLettered || dead
		if err != nil {
			return res, fmt.Errorf("request on %s: %w", m.Topic, err)
		}
		if s.policy.Stops(ack) {
			res.Stopped = true
			break
		}
	}
	return res, nil
}

// call runs the handler for a Request, turning errors and panics into acks.
func (s *memSub) call(ctx context.Context, m *Message) (ack Ack) {
	defer func() {
		if r := recover(); r != nil {
			ack = Ack{Subscriber: s.name, Error: fmt.Sprintf("handler of %s panicked: %v", s.name, r)}
		}
	}()
	a, err := s.h(ctx, *m)
	return s.settle(a, err)
}

// request delivers m for a Request: with the subscription's timeout,
// retrying inline when asked. It reports whether m was dead-lettered; the
// error is the caller's context ending.
func (s *memSub) request(ctx context.Context, m Message) (Ack, bool, error) {
	b := s.bus
	for attempt := 1; ; attempt++ {
		m.Attempt = attempt
		ack, err := s.callTimeout(ctx, &m)
		if err != nil {
			return ack, false, err
		}
		if ack.Error != "" {
			b.deadLetter(s, m, fmt.Sprintf("delivery to %s failed: %s", s.name, ack.Error), attempt, ack)
			return ack, true, nil
		}
		if !ack.ShouldRetry {
			return ack, false, nil
		}
		if attempt >= b.opts.MaxAttempts {
			b.deadLetter(s, m, exhausted(s.name, attempt, ack), attempt, ack)
			return ack, true, nil
		}
		if d := retryDelay(ack, 0, b.opts.MaxRetryDelay); d > 0 {
			select {
			case <-b.clock.After(d):
			case <-ctx.Done():
				return ack, false, ctx.Err()
			case <-b.ctx.Done():
				return ack, false, ErrClosed
			}
		}
	}
}

func (s *memSub) callTimeout(ctx context.Context, m *Message) (Ack, error) {
	b := s.bus
	if s.cooperative {
		return s.callCooperative(ctx, m)
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan Ack, 1)
	mc := *m // the goroutine may outlive this call
	go func() { done <- s.call(hctx, &mc) }()
	select {
	case a := <-done:
		return a, nil
	case <-b.clock.After(s.timeout):
		return Ack{Subscriber: s.name, Error: fmt.Sprintf("subscriber %s did not answer within %s", s.name, s.timeout)}, nil
	case <-ctx.Done():
		return Ack{Subscriber: s.name, Error: "request cancelled before " + s.name + " answered"}, ctx.Err()
	case <-b.ctx.Done():
		return Ack{Subscriber: s.name, Error: "bus closed before " + s.name + " answered"}, ErrClosed
	}
}

// callCooperative calls a cooperative handler on the requesting goroutine.
// Its context ends at the timeout, when the request is cancelled or when the
// bus closes; a handler that then gives up with an error is reported with
// the same ack as on the hand-off path.
func (s *memSub) callCooperative(ctx context.Context, m *Message) (Ack, error) {
	hctx, done := s.bus.deadlines.watch(ctx, s.timeout)
	a := s.call(hctx, m)
	cause := context.Cause(hctx)
	done()
	switch {
	case ctx.Err() != nil:
		return Ack{Subscriber: s.name, Error: "request cancelled before " + s.name + " answered"}, ctx.Err()
	case a.Error == "" || cause == nil:
		return a, nil
	case cause == ErrClosed:
		return Ack{Subscriber: s.name, Error: "bus closed before " + s.name + " answered"}, ErrClosed
	}
	return Ack{Subscriber: s.name, Error: fmt.Sprintf("subscriber %s did not answer within %s", s.name, s.timeout)}, nil
}
