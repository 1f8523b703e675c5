package bus

import "sync"

// queue is a subscription's FIFO of deliveries. Unlike a buffered channel
// it holds memory for what is queued, not for its capacity: a subscription
// allowed 1,024 messages costs a few words until messages wait in it, and
// gives the memory back once they are taken.
type queue struct {
	mu    sync.Mutex
	items []delivery
	head  int // items[head:] are queued
	limit int
	ready chan struct{} // signalled when an item is added
	room  chan struct{} // signalled when an item is taken
}

func newQueue(limit int) *queue {
	return &queue{limit: limit, ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// push adds d unless the queue holds limit items; force adds it anyway (the
// worker's stop marker and a finished worker's leftovers).
func (q *queue) push(d delivery, force bool) bool {
	q.mu.Lock()
	if !force && len(q.items)-q.head >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, d)
	q.mu.Unlock()
	signal(q.ready)
	return true
}

// pop takes the oldest item, if any.
func (q *queue) pop() (delivery, bool) {
	q.mu.Lock()
	if q.head == len(q.items) {
		q.mu.Unlock()
		return delivery{}, false
	}
	d := q.items[q.head]
	q.items[q.head] = delivery{} // let the message go
	q.head++
	switch {
	case q.head == len(q.items):
		// Empty: keep a small backing array, drop a large one.
		if cap(q.items) > 64 {
			q.items = nil
		} else {
			q.items = q.items[:0]
		}
		q.head = 0
	case q.head >= 256 && q.head*2 >= len(q.items):
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.mu.Unlock()
	signal(q.room)
	return d, true
}

// len returns the number of queued items.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

// hasRoom reports whether a push would succeed now.
func (q *queue) hasRoom() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)-q.head < q.limit
}

// signal wakes one waiter without blocking; a pending signal is enough.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
