package bus

import (
	"context"
	"fmt"
	"strings"
)

// Retained implements Bus.
func (b *Memory) Retained(ctx context.Context, topic string) (Message, bool, error) {
	if err := ValidateTopic(topic); err != nil {
		return Message{}, false, err
	}
	if !matchAny(b.retained, topic) {
		return Message{}, false, fmt.Errorf("topic %q is not retained (retained patterns: %s)", topic, strings.Join(b.opts.Retained, ", "))
	}
	b.storeMu.Lock()
	defer b.storeMu.Unlock()
	m, ok := b.last[topic]
	return m, ok, nil
}

// Replay implements Bus.
func (b *Memory) Replay(ctx context.Context, topic string, from uint64, fn func(offset uint64, m Message) bool) error {
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	if !matchAny(b.appendOnly, topic) {
		return fmt.Errorf("topic %q is not append-only (append-only patterns: %s)", topic, strings.Join(b.opts.AppendOnly, ", "))
	}
	b.storeMu.Lock()
	from = max(from, 1)
	var v logView // appends never change the messages it holds
	if l := b.logs[topic]; l != nil {
		v = l.view(from)
	}
	b.storeMu.Unlock()
	var err error
	v.each(func(off uint64, m Message) bool { // dropped messages are skipped
		if err = ctx.Err(); err != nil {
			err = fmt.Errorf("replay %s: %w", topic, err)
			return false
		}
		return fn(off, m)
	})
	return err
}

// Forget drops what topic keeps: its retained message and its append-only
// log. A later message on it starts afresh, from offset 1. Faces call it
// for topics nobody will read again (a forgotten session's log), so that a
// long-lived bus stays bounded.
func (b *Memory) Forget(ctx context.Context, topic string) error {
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	b.storeMu.Lock()
	defer b.storeMu.Unlock()
	if l := b.logs[topic]; l != nil {
		b.storeBytes -= l.bytes
	}
	if m, ok := b.last[topic]; ok {
		b.storeBytes -= storedSize(m)
	}
	delete(b.logs, topic)
	delete(b.last, topic)
	return nil
}

// storedSize is what keeping m costs, roughly: its variable parts and a
// fixed cost for the struct, its header map and the slice slot.
func storedSize(m Message) int64 {
	n := int64(len(m.ID) + len(m.Topic) + len(m.Payload) + len(m.IdempotencyKey) + 160)
	for k, v := range m.Headers {
		n += int64(len(k) + len(v) + 32)
	}
	return n
}

func (b *Memory) store(r *route, m Message) (uint64, error) {
	b.storeMu.Lock()
	off, dropped, err := b.storeLocked(r, m)
	b.storeMu.Unlock()
	for _, d := range dropped {
		b.evicted(d)
	}
	return off, err
}

// eviction is what one publish dropped from one log to fit the store.
type eviction struct {
	topic    string
	first    Message
	from, to uint64
}

// evicted records and announces a dead-letter notice for messages dropped
// to keep the store under MaxStoreBytes: `weave bus dlq` shows them, and
// subscribers of the dead-letter topic hear of it.
func (b *Memory) evicted(d eviction) {
	n := d.to - d.from + 1
	// The notice names the first dropped message but does not keep its
	// payload: the point of dropping it was to free that memory.
	d.first.Payload, d.first.Headers = nil, nil
	dl := DeadLetter{
		ID:      "dl-" + b.newID(),
		Message: d.first,
		Reason: fmt.Sprintf("dropped %d message(s) of %s (offsets %d to %d) to keep retained and append-only topics under bus.max_store_bytes; raise it to keep more",
			n, d.topic, d.from, d.to),
		Time: b.clock.Now(),
	}
	b.keepDeadLetter(dl, nil)
}

func (b *Memory) storeLocked(r *route, m Message) (uint64, []eviction, error) {
	_, kept := b.last[m.Topic]
	if !kept && b.logs[m.Topic] == nil && len(b.last)+len(b.logs) >= b.opts.MaxTopics {
		return 0, nil, limitf("publish on %q: the bus keeps its limit of %d retained and append-only topics (bus.max_topics): forget old ones or raise the limit", m.Topic, b.opts.MaxTopics)
	}
	size := storedSize(m)
	grow := int64(0)
	if r.retained {
		grow += size
		if old, ok := b.last[m.Topic]; ok {
			grow -= storedSize(old)
		}
	}
	if r.appendOnly {
		grow += size
	}
	dropped, ok := b.makeRoom(m.Topic, grow)
	if !ok {
		return 0, dropped, limitf("publish on %q: retained messages and append-only logs hold %d bytes, the bus's limit (bus.max_store_bytes): forget old topics or raise the limit", m.Topic, b.storeBytes)
	}
	l := b.logs[m.Topic]
	if r.retained {
		if old, ok := b.last[m.Topic]; ok {
			b.storeBytes -= storedSize(old)
		}
		b.last[m.Topic] = m
		b.storeBytes += size
	}
	if r.appendOnly {
		if l == nil {
			l = &memLog{first: 1}
			b.logs[m.Topic] = l
		}
		off, grew := l.add(m, b.opts.MaxLogMessages)
		b.storeBytes += grew
		return off, dropped, nil
	}
	return 0, dropped, nil
}

// makeRoom drops the oldest messages of append-only logs until grow more
// bytes fit under MaxStoreBytes: topic's own first, so that a topic that
// floods the store pays for it, then those of another log (the first the
// map's random order gives: constant time, and no log is favoured). It
// reports whether they fit; retained messages are never dropped. Called
// with storeMu held.
func (b *Memory) makeRoom(topic string, grow int64) ([]eviction, bool) {
	if grow > b.opts.MaxStoreBytes {
		// Nothing dropped could make room: keep what is there.
		return nil, false
	}
	var dropped []eviction
	for b.storeBytes+grow > b.opts.MaxStoreBytes {
		victim := b.logs[topic]
		if victim == nil || victim.n == 0 {
			victim = nil
			for _, l := range b.logs {
				if l.n > 0 {
					victim = l
					break
				}
			}
		}
		if victim == nil {
			return dropped, false
		}
		off, first := victim.first, victim.front()
		before := victim.bytes
		victim.drop(1)
		b.storeBytes += victim.bytes - before
		if n := len(dropped); n > 0 && dropped[n-1].topic == first.Topic && dropped[n-1].to+1 == off {
			dropped[n-1].to = off
		} else {
			dropped = append(dropped, eviction{topic: first.Topic, first: first, from: off, to: off})
		}
	}
	return dropped, true
}
