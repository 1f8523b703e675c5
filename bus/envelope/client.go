package envelope

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/weavehq/weave/internal/interrupt"
)

// Client speaks the envelope protocol over a Unix socket. Do sends a command
// and waits for its reply; everything else the bus pushes (events addressed
// to the client's agents, events.record frames of a stream) arrives on
// Events, in order.
//
// Whoever holds the read token reads the socket. A Do reads its own reply
// when no one else is reading, which spares a round trip the hand-off from
// a reader goroutine; the reader goroutine starts once pushed envelopes
// matter (Events was called, or one arrived), and from then on it reads
// while no Do does, handing each reply to the Do that waits for it.
type Client struct {
	nc net.Conn
	r  *bufio.Reader

	wmu    sync.Mutex // orders seq assignment with writes
	w      *bufio.Writer
	seq    int64
	stamps stamper // ids and ts of what the client sends

	mu      sync.Mutex
	pending map[string]chan Envelope
	err     error
	// spare is a reply channel a finished Do gave back: empty, and in
	// no one's hands.
	spare chan Envelope

	// rtok holds the right to read the socket; partial is a line cut
	// short by a Do's cancelled read, kept for the next reader. Both
	// belong to the token's holder.
	rtok    chan struct{}
	partial []byte

	readerOnce sync.Once
	events     chan Envelope
	done       chan struct{} // closed once err is set
	closing    chan struct{}
	closeOnce  sync.Once
}

// maxLine bounds a line the client accepts from the bus.
const maxLine = 1 << 30

// Dial connects to the bus socket at path.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dial bus socket %s: %w (is the bus running?)", path, err)
	}
	c := &Client{
		nc:      nc,
		r:       bufio.NewReaderSize(nc, 64<<10),
		w:       bufio.NewWriter(nc),
		pending: make(map[string]chan Envelope),
		rtok:    make(chan struct{}, 1),
		events:  make(chan Envelope, 1024),
		done:    make(chan struct{}),
		closing: make(chan struct{}),
	}
	c.rtok <- struct{}{}
	return c, nil
}

// Events returns the envelopes the bus pushes that are not replies. It is
// closed when the connection ends. The client stops reading the socket while
// Events is full, so a consumer must keep draining it.
func (c *Client) Events() <-chan Envelope {
	c.startReader()
	return c.events
}

func (c *Client) startReader() { c.readerOnce.Do(func() { go c.readLoop() }) }

// Close closes the connection.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { close(c.closing) })
	return c.nc.Close()
}

// Send writes env without waiting for its reply, which is dropped when it
// arrives (use Do to see it). It fills v, id, ts and seq when they are empty
// and returns the envelope as sent.
func (c *Client) Send(env Envelope) (Envelope, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.sendLocked(env)
}

func (c *Client) sendLocked(env Envelope) (Envelope, error) {
	if env.V == 0 {
		env.V = Version
	}
	if env.ID == "" {
		env.ID = c.stamps.id()
	}
	if env.TS == "" {
		env.TS = c.stamps.ts(time.Now())
	}
	if env.Seq == 0 {
		c.seq++
		env.Seq = c.seq
	} else if env.Seq > c.seq {
		c.seq = env.Seq
	}
	if err := writeEnvelope(c.w, &env); err != nil {
		return env, fmt.Errorf("send %s: %w", env.Type, err)
	}
	if err := c.w.Flush(); err != nil {
		return env, fmt.Errorf("send %s: %w", env.Type, err)
	}
	return env, nil
}

// Do sends env and returns the reply whose corr is env's id. A protocol
// error is a reply with status "error" (see Envelope.Err); the error result
// is for transport failures and ctx.
func (c *Client) Do(ctx context.Context, env Envelope) (Envelope, error) {
	c.wmu.Lock()
	if env.ID == "" {
		env.ID = c.stamps.id()
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.wmu.Unlock()
		return Envelope{}, err
	}
	ch := c.spare
	c.spare = nil
	if ch == nil {
		ch = make(chan Envelope, 1)
	}
	c.pending[env.ID] = ch
	c.mu.Unlock()
	_, err := c.sendLocked(env)
	c.wmu.Unlock()
	if err != nil {
		c.forget(env.ID)
		return Envelope{}, err
	}
	for {
		select {
		case <-c.rtok: // the common case, no one else reading: no need to wait
		default:
			select {
			case reply := <-ch:
				// dispatch took ch out of pending before its one send.
				c.giveBack(ch)
				return reply, nil
			case <-c.rtok:
			case <-c.done:
				c.forget(env.ID)
				return Envelope{}, c.connErr()
			case <-ctx.Done():
				c.forget(env.ID)
				return Envelope{}, fmt.Errorf("wait for %s reply: %w", env.Type, ctx.Err())
			}
		}
		reply, ok, err := c.readFor(ctx, env.ID, ch)
		c.rtok <- struct{}{}
		if ok {
			c.giveBack(ch)
		}
		if ok || err != nil {
			return reply, err
		}
	}
}

// readFor reads the socket, holding the read token, until the reply to id
// arrives, dispatching whatever comes before it. It reports false without
// an error when the reply was handed over meanwhile.
func (c *Client) readFor(ctx context.Context, id string, ch chan Envelope) (Envelope, bool, error) {
	select {
	case reply := <-ch:
		return reply, true, nil
	default:
	}
	if ctx.Done() != nil {
		// Cleared before the read token passes on.
		defer interrupt.OnDone(ctx, c.nc.SetReadDeadline)()
	}
	for {
		env, err := c.readEnvelope()
		if err != nil {
			c.forget(id)
			if ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded) {
				return Envelope{}, false, fmt.Errorf("wait for reply: %w", ctx.Err())
			}
			c.fail(err)
			return Envelope{}, false, c.connErr()
		}
		if env.Corr == id {
			c.forget(id)
			return env, true, nil
		}
		if !c.dispatch(env) {
			c.forget(id)
			return Envelope{}, false, c.connErr()
		}
	}
}

// giveBack keeps ch, a reply channel that is empty and that no one else
// holds, for the next Do.
func (c *Client) giveBack(ch chan Envelope) {
	c.mu.Lock()
	c.spare = ch
	c.mu.Unlock()
}

// readEnvelope reads and decodes the next line. A line cut short by a
// deadline is kept, and completed by the next read.
func (c *Client) readEnvelope() (Envelope, error) {
	line, _, err := readLine(c.r, maxLine)
	if err != nil {
		c.partial = append(c.partial, line...)
		return Envelope{}, err
	}
	if len(c.partial) > 0 {
		line = append(c.partial, line...)
		c.partial = nil
	}
	var env Envelope
	if err := unmarshalEnvelope(line, &env); err != nil {
		return Envelope{}, fmt.Errorf("bus sent a line that is not an envelope: %w", err)
	}
	return env, nil
}

// dispatch hands env to the Do waiting for it, or to Events. It reports
// false when the client is closing.
func (c *Client) dispatch(env Envelope) bool {
	if env.Corr != "" {
		c.mu.Lock()
		ch, ok := c.pending[env.Corr]
		delete(c.pending, env.Corr)
		c.mu.Unlock()
		if ok {
			ch <- env
			return true
		}
		if env.Status != "" {
			return true // a reply nobody waits for any more (its Do gave up)
		}
	}
	// A pushed envelope: from now on pushes matter, and the reader reads
	// while no Do does.
	c.startReader()
	select {
	case c.events <- env:
		return true
	case <-c.closing:
		return false
	}
}

func (c *Client) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// fail records why the connection ended, once.
func (c *Client) fail(err error) {
	if errors.Is(err, net.ErrClosed) {
		err = errors.New("bus connection closed")
	} else {
		err = fmt.Errorf("bus connection lost: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}

func (c *Client) connErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return errors.New("bus connection closed")
	}
	return c.err
}

// readLoop reads while no Do does, until the connection ends.
func (c *Client) readLoop() {
	defer close(c.events)
	for {
		select {
		case <-c.rtok:
		case <-c.done:
			return
		}
		env, err := c.readEnvelope()
		if err == nil && !c.dispatch(env) {
			err = net.ErrClosed
		}
		c.rtok <- struct{}{}
		if err != nil {
			c.fail(err)
			return
		}
	}
}
