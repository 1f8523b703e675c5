package envelope

import "sync"

// outbox is a bounded queue of envelopes for one connection or stream. A push
// never blocks: a full queue marks the consumer slow and shuts it. Whoever
// writes takes the whole queue at once, so a connection's reader can send its
// own replies without waking the writer, and order holds.
type outbox struct {
	mu     sync.Mutex
	q      []Envelope
	spare  []Envelope // a taken queue given back, for the next pushes
	max    int
	slow   bool
	notify chan struct{} // a push happened

	dead     chan struct{} // closed: stop now
	finished chan struct{} // closed: write what is queued, then stop
	deadOnce sync.Once
	finOnce  sync.Once
	// onKill unblocks the writer (closes its socket or ends its response).
	onKill func()
}

func newOutbox(n int) *outbox {
	return &outbox{max: n, notify: make(chan struct{}, 1), dead: make(chan struct{}), finished: make(chan struct{})}
}

func (o *outbox) push(e Envelope) bool { return o.add(e, true) }

// pushQuiet queues e without waking the writer, for a caller that flushes
// itself right after.
func (o *outbox) pushQuiet(e Envelope) bool { return o.add(e, false) }

func (o *outbox) add(e Envelope, wake bool) bool {
	select {
	case <-o.dead:
		return false
	default:
	}
	o.mu.Lock()
	if len(o.q) >= o.max {
		o.slow = true
		o.mu.Unlock()
		o.kill()
		return false
	}
	o.q = append(o.q, e)
	o.mu.Unlock()
	if wake {
		select {
		case o.notify <- struct{}{}:
		default:
		}
	}
	return true
}

func (o *outbox) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.q)
}

// take returns everything queued, oldest first. The caller may give the
// slice back with recycle once it is done with it.
func (o *outbox) take() []Envelope {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.q
	if len(q) == 0 {
		return nil
	}
	o.q, o.spare = o.spare, nil
	return q
}

// maxSpare bounds the queue kept for reuse, so that one burst does not pin
// its memory for the life of the connection.
const maxSpare = 64

// recycle gives back a slice take returned, so that a connection that
// answers one request at a time queues without allocating.
func (o *outbox) recycle(q []Envelope) {
	if cap(q) > maxSpare {
		return
	}
	clear(q) // drop what the envelopes point to
	o.mu.Lock()
	if o.spare == nil {
		o.spare = q[:0]
	}
	o.mu.Unlock()
}

func (o *outbox) isSlow() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.slow
}

func (o *outbox) kill() {
	o.deadOnce.Do(func() {
		close(o.dead)
		if o.onKill != nil {
			o.onKill()
		}
	})
}

func (o *outbox) finish() { o.finOnce.Do(func() { close(o.finished) }) }
