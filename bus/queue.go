package bus

import "sync"

// queue is a subscription's FIFO of deliveries: a ring that grows as
// messages wait in it, up to the subscription's limit. Unlike a buffered
// channel it does not take memory for its capacity up front: a subscription
// allowed 1,024 messages costs a few words until messages wait in it, and
// at most what its longest backlog took, given back when it ends. It never
// shrinks while in use, so a busy subscriber does not allocate per message.
type queue struct {
	mu    sync.Mutex
	buf   []delivery
	head  int // index of the oldest item
	n     int // items queued
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
	if !force && q.n >= q.limit {
		q.mu.Unlock()
		return false
	}
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = d
	q.n++
	wasEmpty := q.n == 1
	q.mu.Unlock()
	// The worker waits on ready only after finding the queue empty, so only
	// the push that ends an empty spell needs to wake it.
	if wasEmpty {
		signal(q.ready)
	}
	return true
}

// grow doubles the ring (from 8), up to the limit unless forced past it.
func (q *queue) grow() {
	size := max(8, 2*len(q.buf))
	if size > q.limit && len(q.buf) < q.limit {
		size = q.limit
	}
	buf := make([]delivery, size)
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = buf, 0
}

// pop takes the oldest item, if any.
func (q *queue) pop() (delivery, bool) {
	q.mu.Lock()
	if q.n == 0 {
		q.mu.Unlock()
		return delivery{}, false
	}
	d := q.buf[q.head]
	q.buf[q.head] = delivery{} // let the message go
	q.head = (q.head + 1) % len(q.buf)
	wasFull := q.n >= q.limit
	q.n--
	q.mu.Unlock()
	// Likewise publishers wait on room only after finding the queue full.
	if wasFull {
		signal(q.room)
	}
	return d, true
}

// len returns the number of queued items.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// hasRoom reports whether a push would succeed now.
func (q *queue) hasRoom() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n < q.limit
}

// signal wakes one waiter without blocking; a pending signal is enough.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
