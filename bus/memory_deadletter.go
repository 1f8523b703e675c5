package bus

import (
	"context"
	"encoding/json"
	"fmt"
)

func (b *Memory) deadLetter(s *memSub, m Message, reason string, attempts int, last Ack) {
	if m.Topic == DeadLetterTopic {
		// An announcement nobody took is dropped: the dead letter it
		// announces is stored already, and keeping it again would store
		// each failure twice.
		return
	}
	b.stamp(&m)
	dl := DeadLetter{
		ID:         "dl-" + b.newID(),
		Message:    m,
		Subscriber: s.name,
		Pattern:    s.pat.raw,
		Reason:     reason,
		Attempts:   attempts,
		LastAck:    last,
		Time:       b.clock.Now(),
	}
	b.keepDeadLetter(dl, s)
}

// keepDeadLetter stores dl, for replay to s when s is not nil, drops the
// oldest past MaxDeadLetters, and announces it.
func (b *Memory) keepDeadLetter(dl DeadLetter, s *memSub) {
	b.dlqMu.Lock()
	b.dlq = append(b.dlq, dl)
	if s != nil {
		b.dlqSub[dl.ID] = s
	}
	if n := len(b.dlq) - b.opts.MaxDeadLetters; n > 0 {
		for _, old := range b.dlq[:n] {
			delete(b.dlqSub, old.ID)
		}
		b.dlq = b.dlq[n:]
	}
	b.dlqMu.Unlock()
	b.announce(dl)
}

// announce publishes dl on DeadLetterTopic without ever blocking: the dead
// letter is stored already, the announcement is a courtesy.
func (b *Memory) announce(dl DeadLetter) {
	if b.closed.Load() {
		return
	}
	payload, err := json.Marshal(dl)
	if err != nil {
		return
	}
	r, err := b.route(DeadLetterTopic)
	if err != nil {
		return
	}
	m := Message{ID: b.newID(), Topic: DeadLetterTopic, Payload: payload, Time: b.clock.Now()}
	for _, s := range r.subs {
		if s.removed.Load() {
			continue
		}
		if s.q.push(delivery{m: m}, false) {
			s.rescueIfExited()
		}
	}
}

// DeadLetters implements Bus.
func (b *Memory) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	b.dlqMu.Lock()
	defer b.dlqMu.Unlock()
	out := make([]DeadLetter, len(b.dlq))
	copy(out, b.dlq)
	return out, nil
}

// ReplayDeadLetter implements Bus.
func (b *Memory) ReplayDeadLetter(ctx context.Context, id string) (Result, error) {
	if b.closed.Load() {
		return Result{}, ErrClosed
	}
	b.dlqMu.Lock()
	i := -1
	for j := range b.dlq {
		if b.dlq[j].ID == id {
			i = j
			break
		}
	}
	if i < 0 {
		b.dlqMu.Unlock()
		return Result{}, fmt.Errorf("dead letter %q: %w (list them with weave bus dlq)", id, ErrNotFound)
	}
	dl := b.dlq[i]
	if dl.Subscriber == "" {
		// A notice of messages dropped to fit the store: their payloads
		// are gone, and no delivery failed.
		b.dlqMu.Unlock()
		return Result{}, fmt.Errorf("dead letter %q notes messages dropped to fit bus.max_store_bytes; there is nothing to replay", id)
	}
	s := b.dlqSub[id]
	b.dlq = append(b.dlq[:i:i], b.dlq[i+1:]...)
	delete(b.dlqSub, id)
	b.dlqMu.Unlock()

	m := dl.Message
	m.Attempt = 0
	res := Result{MessageID: m.ID}
	if s != nil && !s.removed.Load() {
		return b.walk(ctx, m, []*memSub{s}, res)
	}
	r, err := b.route(m.Topic)
	if err != nil {
		return res, err
	}
	return b.walk(ctx, m, r.subs, res)
}

// retry goes on with a Publish delivery whose attempt m.Attempt failed
// with ack.
func (s *memSub) retry(m *Message, ack Ack) {
	b := s.bus
	for {
		if m.Attempt >= b.opts.MaxAttempts {
			b.deadLetter(s, *m, exhausted(s.name, m.Attempt, ack), m.Attempt, ack)
			return
		}
		if d := retryDelay(ack, b.opts.RetryDelay, b.opts.MaxRetryDelay); d > 0 {
			select {
			case <-b.clock.After(d):
			case <-b.ctx.Done():
				b.deadLetter(s, *m, "bus closed while waiting to retry", m.Attempt, ack)
				return
			}
		}
		m.Attempt++
		a, err := s.deliver(m)
		ack = s.settle(a, err)
		if ack.Error == "" && !ack.ShouldRetry {
			return
		}
	}
}

func exhausted(name string, attempts int, ack Ack) string {
	why := ack.Error
	if why == "" {
		why = ack.Message
	}
	if why == "" {
		why = "asked for a retry"
	}
	return fmt.Sprintf("gave up after %d attempts to %s: %s", attempts, name, why)
}
