package envelope

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/weavehq/weave/internal/fastjson"
)

// Client speaks the envelope protocol over a Unix socket. Do sends a command
// and waits for its reply; everything else the bus pushes (events addressed
// to the client's agents, events.record frames of a stream) arrives on
// Events, in order.
type Client struct {
	nc net.Conn

	wmu sync.Mutex // orders seq assignment with writes
	w   *bufio.Writer
	enc *fastjson.Encoder
	seq int64

	mu      sync.Mutex
	pending map[string]chan Envelope
	err     error

	events    chan Envelope
	done      chan struct{}
	closing   chan struct{}
	closeOnce sync.Once
}

// Dial connects to the bus socket at path.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dial bus socket %s: %w (is the bus running?)", path, err)
	}
	w := bufio.NewWriter(nc)
	enc := fastjson.NewEncoder(w)
	enc.SetEscapeHTML(false)
	c := &Client{
		nc:      nc,
		w:       w,
		enc:     enc,
		pending: make(map[string]chan Envelope),
		events:  make(chan Envelope, 1024),
		done:    make(chan struct{}),
		closing: make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

// Events returns the envelopes the bus pushes that are not replies. It is
// closed when the connection ends. The client stops reading the socket while
// Events is full, so a consumer must keep draining it.
func (c *Client) Events() <-chan Envelope { return c.events }

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
		env.ID = NewID()
	}
	if env.TS == "" {
		env.TS = FormatTime(time.Now())
	}
	if env.Seq == 0 {
		c.seq++
		env.Seq = c.seq
	} else if env.Seq > c.seq {
		c.seq = env.Seq
	}
	if err := c.enc.Encode(env); err != nil {
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
	ch := make(chan Envelope, 1)
	c.wmu.Lock()
	if env.ID == "" {
		env.ID = NewID()
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.wmu.Unlock()
		return Envelope{}, err
	}
	c.pending[env.ID] = ch
	c.mu.Unlock()
	_, err := c.sendLocked(env)
	c.wmu.Unlock()
	if err != nil {
		c.forget(env.ID)
		return Envelope{}, err
	}
	select {
	case reply := <-ch:
		return reply, nil
	case <-c.done:
		c.forget(env.ID)
		c.mu.Lock()
		defer c.mu.Unlock()
		return Envelope{}, c.err
	case <-ctx.Done():
		c.forget(env.ID)
		return Envelope{}, fmt.Errorf("wait for %s reply: %w", env.Type, ctx.Err())
	}
}

func (c *Client) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *Client) readLoop() {
	defer close(c.events)
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var err error
	for {
		var line []byte
		if line, _, err = readLine(r, 1<<30); err != nil {
			break
		}
		var env Envelope
		if err = fastjson.Unmarshal(line, &env); err != nil {
			err = fmt.Errorf("bus sent a line that is not an envelope: %w", err)
			break
		}
		c.mu.Lock()
		ch, ok := c.pending[env.Corr]
		if ok && env.Corr != "" {
			delete(c.pending, env.Corr)
		}
		c.mu.Unlock()
		if ok && env.Corr != "" {
			ch <- env
			continue
		}
		if env.Corr != "" && env.Status != "" {
			continue // a reply nobody waits for any more (its Do gave up)
		}
		select {
		case c.events <- env:
			continue
		case <-c.closing:
			err = net.ErrClosed
		}
		break
	}
	if errors.Is(err, net.ErrClosed) {
		err = errors.New("bus connection closed")
	} else {
		err = fmt.Errorf("bus connection lost: %w", err)
	}
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}
