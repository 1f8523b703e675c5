package jsonrpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/internal/fastjson"
)

// ErrClientClosed is returned by calls on a closed Client.
var ErrClientClosed = errors.New("bus client is closed")

// DialOption tunes Dial.
type DialOption func(*Client)

// WithClientID sets the clientId sent in initialize; the default is the
// client name and a random suffix.
func WithClientID(id string) DialOption { return func(c *Client) { c.id = id } }

// WithToken sends token as a bearer token.
func WithToken(token string) DialOption { return func(c *Client) { c.token = token } }

// WithoutReconnect makes a lost connection final: calls then fail.
func WithoutReconnect() DialOption { return func(c *Client) { c.reconnect = false } }

// WithTLSConfig sets the TLS configuration for wss:// URLs (the default
// trusts the system's roots).
func WithTLSConfig(cfg *tls.Config) DialOption { return func(c *Client) { c.tls = cfg } }

// WithMaxFrameBytes bounds frames read from the server (default 1 MiB).
func WithMaxFrameBytes(n int64) DialOption { return func(c *Client) { c.maxFrame = n } }

// SubscribeOptions tune Client.Subscribe.
type SubscribeOptions struct {
	Policy bus.Policy
	// Method is how the server delivers: "sendMessage" (default) or
	// "processMessage".
	Method string
}

// Client is a bus peer over WebSocket. It reconnects when the connection is
// lost, initializes again with the same clientId and subscribes again to
// everything it was subscribed to, in the same order. It is safe for
// concurrent use.
//
// Nobody reads the connection for the client as a matter of course: a call
// reads frames itself until its own answer comes, handing whatever else it
// reads to the calls and subscriptions it belongs to. That saves waking a
// reader goroutine for every answer. While other calls wait, one of them
// takes over the reading when the first is done; while the client has
// subscriptions, or has been idle for a moment, a goroutine reads, so that
// deliveries are answered and a lost connection is noticed and redialled
// before the next call.
type Client struct {
	url       string
	info      ClientInfo
	id        string
	token     string
	reconnect bool
	maxFrame  int64
	tls       *tls.Config

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // readers, redials and handlers; Add only under mu while !closed

	mu      sync.Mutex
	closed  bool
	conn    *clientConn   // nil while reconnecting
	ready   chan struct{} // closed when conn is usable
	reading bool          // the read token: someone reads conn
	idle    *time.Timer   // starts a reader once the client has been idle
	pending map[string]*pendingCall
	nextID  uint64
	subs    []*clientSub
	server  InitializeResult
	conns   int // connections made, for tests and logs
}

// idleRead is how long the client goes without a reader after its last
// answer: back-to-back calls read for themselves, and a quiet client still
// notices a lost connection within this.
const idleRead = 2 * time.Millisecond

// pendingCall is a call waiting for its answer.
type pendingCall struct {
	// ch gets the answer, or lead when the call is to take over reading;
	// it is closed when the connection is lost.
	ch     chan reply
	parked bool // waiting on ch while another reads
}

type reply struct {
	in   incoming
	lead bool
}

type clientSub struct {
	// active is set once the server has the subscription; only active
	// ones are renewed after a reconnect.
	active  bool
	pattern string
	h       bus.Handler
	opts    SubscribeOptions
}

// Dial connects to the bus at url (ws:// or wss://) and initializes.
func Dial(ctx context.Context, url string, info ClientInfo, opts ...DialOption) (*Client, error) {
	c := &Client{url: url, info: info, reconnect: true, maxFrame: DefaultMaxFrameBytes, pending: make(map[string]*pendingCall)}
	for _, o := range opts {
		o(c)
	}
	if c.id == "" {
		c.id = info.Name + "-" + newAgentID()[len("agent-"):]
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ready = make(chan struct{})
	c.idle = time.AfterFunc(time.Hour, c.readWhileIdle)
	c.idle.Stop()
	if err := c.connect(ctx); err != nil {
		c.cancel()
		return nil, err
	}
	return c, nil
}

// ID returns the clientId.
func (c *Client) ID() string { return c.id }

// Server returns the server's initialize result.
func (c *Client) Server() InitializeResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server
}

// Connections returns how many times the client has connected (1 until
// the first reconnect).
func (c *Client) Connections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns
}

// connect dials, initializes and re-subscribes; on success the connection
// is the client's.
func (c *Client) connect(ctx context.Context) error {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	fc, err := dialConn(ctx, c.url, h, c.tls, c.maxFrame)
	if err != nil {
		if errors.Is(err, errUnauthorized) {
			return fmt.Errorf("dial bus %s: unauthorized: pass the bus token (WEAVE_BUS_TOKEN)", c.url)
		}
		return fmt.Errorf("dial bus %s: %w", c.url, err)
	}
	// Nobody else has the connection yet: answers are read here.
	init := func(method string, params, result any) error {
		id := "init"
		data, _ := json.Marshal(request{JSONRPC: "2.0", Method: method, Params: params, ID: json.RawMessage(strconv.Quote(id))})
		if err := fc.writeMessage(ctx, data); err != nil {
			return err
		}
		for {
			frame, err := fc.readMessage(ctx)
			if err != nil {
				return err
			}
			in, _ := parseIncoming(bytes.TrimSpace(frame))
			if !in.response {
				// A delivery on a subscription renewed a moment ago: ask
				// the bus to retry it once the connection is ready.
				if in.method != "" && !in.notification() {
					f := false
					data, _ := json.Marshal(resultResponse(in.id, AckResult{Processed: &f, ShouldRetry: true, RetrySeconds: 1, Message: "reconnecting"}))
					_ = fc.writeMessage(ctx, data)
				}
				continue
			}
			if in.err != nil {
				return in.err
			}
			return json.Unmarshal(in.result, result)
		}
	}
	var server InitializeResult
	info, _ := json.Marshal(c.info)
	if err := init("initialize", initializeParams{ClientID: c.id, ClientInfo: info}, &server); err != nil {
		fc.close()
		return fmt.Errorf("initialize with bus %s: %w", c.url, err)
	}
	c.mu.Lock()
	var subs []clientSub
	for _, s := range c.subs {
		if s.active {
			subs = append(subs, *s)
		}
	}
	c.mu.Unlock()
	for _, s := range subs {
		var ok map[string]bool
		if err := init("subscribe", subscribeParams{Topic: &s.pattern, Policy: string(s.opts.Policy), Method: s.opts.Method}, &ok); err != nil {
			fc.close()
			return fmt.Errorf("subscribe again to %q on bus %s: %w", s.pattern, c.url, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		fc.close()
		return ErrClientClosed
	}
	c.conn = fc
	c.server = server
	c.conns++
	close(c.ready)
	c.reading = false
	c.handOnLocked(fc)
	return nil
}

// handOnLocked decides who reads fc next, once its reader is done: a call
// still waiting, else a goroutine for the subscriptions, else nobody until
// the client has been idle for idleRead. c.mu is held.
func (c *Client) handOnLocked(fc *clientConn) {
	if c.conn != fc {
		return // lost meanwhile: nothing to read
	}
	for _, w := range c.pending {
		if w.parked {
			w.parked = false
			w.ch <- reply{lead: true}
			return
		}
	}
	if c.subscribedLocked() && c.readInBackgroundLocked(fc) {
		return
	}
	c.reading = false
	if !c.closed {
		c.idle.Reset(idleRead)
	}
}

func (c *Client) handOn(fc *clientConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handOnLocked(fc)
}

// goLocked runs f on a goroutine Close waits for, unless the client is
// closed. c.mu is held.
func (c *Client) goLocked(f func()) bool {
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

func (c *Client) subscribedLocked() bool {
	for _, s := range c.subs {
		if s.active {
			return true
		}
	}
	return false
}

// readWhileIdle starts a reader when nobody reads: the idle timer.
func (c *Client) readWhileIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reading || c.conn == nil {
		return
	}
	c.readInBackgroundLocked(c.conn)
}

// readInBackgroundLocked gives the read token to a goroutine reading fc
// (readBackground), unless the client is closed. c.mu is held.
func (c *Client) readInBackgroundLocked(fc *clientConn) bool {
	if !c.goLocked(func() { c.readBackground(fc) }) {
		return false
	}
	c.reading = true
	return true
}

// readBackground reads fc for nobody in particular. Without subscriptions it
// steps aside after the first answer it hands over, so that the calls that
// follow read for themselves.
func (c *Client) readBackground(fc *clientConn) {
	done := func(answered bool) bool {
		if !answered {
			return false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.subscribedLocked()
	}
	if c.readFrames(c.ctx, fc, done) == nil {
		c.handOn(fc)
	}
}

// readFrames reads messages from fc and hands each where it belongs until
// done says so after a message (answered: it held an answer). It returns
// nil when done, ctx's error with the read token still held, or a read error
// once the connection has been given up.
func (c *Client) readFrames(ctx context.Context, fc *clientConn, done func(answered bool) bool) error {
	for {
		frame, err := fc.readMessage(ctx)
		if err != nil {
			if ctx.Err() != nil && ctx != c.ctx {
				return err
			}
			c.lost(fc)
			return err
		}
		if done(c.dispatch(fc, frame)) {
			return nil
		}
	}
}

// dispatch hands a message's answers to their calls and serves its
// deliveries; it says whether there was an answer.
func (c *Client) dispatch(fc *clientConn, frame []byte) (answered bool) {
	trimmed := bytes.TrimSpace(frame)
	var elems []json.RawMessage
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Unmarshal(trimmed, &elems) != nil {
			return false
		}
	} else {
		elems = []json.RawMessage{trimmed}
	}
	for _, raw := range elems {
		in, _ := parseIncoming(raw)
		switch {
		case in.invalid != nil:
		case in.response:
			c.deliverResponse(in)
			answered = true
		default:
			c.mu.Lock()
			c.goLocked(func() { c.serveCall(fc, in) })
			c.mu.Unlock()
		}
	}
	return answered
}

// lost gives fc up: its calls fail, and the client redials unless it is
// closed or does not reconnect.
func (c *Client) lost(fc *clientConn) {
	fc.close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != fc {
		return
	}
	c.conn = nil
	c.reading = false
	c.ready = make(chan struct{})
	c.idle.Stop()
	for id, w := range c.pending {
		close(w.ch) // the call fails; the server will not answer on a new connection
		delete(c.pending, id)
	}
	if c.reconnect {
		c.goLocked(c.redial)
	}
}

func (c *Client) redial() {
	wait := 50 * time.Millisecond
	for {
		err := c.connect(c.ctx)
		if err == nil || c.ctx.Err() != nil {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		wait = min(wait*2, 2*time.Second)
	}
}

func (c *Client) deliverResponse(in incoming) {
	var id string
	if json.Unmarshal(in.id, &id) != nil {
		return
	}
	c.mu.Lock()
	w := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if w != nil {
		w.ch <- reply{in: in}
	}
}

// serveCall answers a delivery from the server with the subscription's
// handler.
func (c *Client) serveCall(fc *clientConn, in incoming) {
	var resp *response
	switch in.method {
	case "sendMessage", "processMessage":
		var d Delivery
		if err := json.Unmarshal(in.params, &d); err != nil {
			resp = errorResponse(in.id, errorf(CodeInvalidParams, "invalid params: %v", err))
			break
		}
		h := c.handlerFor(d)
		if h == nil {
			resp = resultResponse(in.id, ackResultOf(bus.Ack{Message: "not subscribed"}))
			break
		}
		ack, err := callHandler(c.ctx, h, d)
		if err != nil {
			resp = errorResponse(in.id, errorf(CodeInternal, "handler failed: %v", err))
			break
		}
		resp = resultResponse(in.id, ackResultOf(ack))
	case "ping":
		resp = resultResponse(in.id, pingResult{Timestamp: time.Now().UTC().Format(time.RFC3339)})
	default:
		resp = errorResponse(in.id, errorf(CodeMethodNotFound, "method not found: %q", in.method))
	}
	if in.notification() {
		return
	}
	data, _ := json.Marshal(resp)
	if fc.writeMessage(c.ctx, data) != nil {
		c.lost(fc)
	}
}

func callHandler(ctx context.Context, h bus.Handler, d Delivery) (ack bus.Ack, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h(ctx, bus.Message{ID: d.MessageID, Topic: d.Topic, Payload: d.Payload, Headers: d.Headers, Attempt: d.Attempt})
}

func (c *Client) handlerFor(d Delivery) bus.Handler {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.subs) - 1; i >= 0; i-- {
		s := c.subs[i]
		if d.Subscription != "" && s.pattern == d.Subscription || d.Subscription == "" && bus.Match(s.pattern, d.Topic) {
			return s.h
		}
	}
	return nil
}

// Call sends a request and decodes its result into result (which may be
// nil). It waits for a live connection while the client reconnects. A
// JSON-RPC error comes back as *Error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	for {
		c.mu.Lock()
		fc, ready := c.conn, c.ready
		c.mu.Unlock()
		if c.ctx.Err() != nil {
			return ErrClientClosed
		}
		if fc == nil {
			if !c.reconnect {
				return fmt.Errorf("%s: connection to bus %s lost", method, c.url)
			}
			select {
			case <-ready:
				continue
			case <-ctx.Done():
				return fmt.Errorf("%s: waiting for the bus connection: %w", method, ctx.Err())
			case <-c.ctx.Done():
				return ErrClientClosed
			}
		}
		in, err := c.roundTrip(ctx, fc, method, params)
		if errors.Is(err, errLost) {
			if c.ctx.Err() != nil {
				return ErrClientClosed
			}
			if c.reconnect {
				return fmt.Errorf("%s: connection to bus %s lost before the answer; it may or may not have run", method, c.url)
			}
		}
		if err != nil {
			return err
		}
		if in.err != nil {
			return in.err
		}
		if result == nil {
			return nil
		}
		if err := fastjson.Unmarshal(in.result, result); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
		return nil
	}
}

var errLost = errors.New("connection lost")

// roundTrip writes the request and waits for its answer, reading fc itself
// when nobody else is.
func (c *Client) roundTrip(ctx context.Context, fc *clientConn, method string, params any) (incoming, error) {
	w := &pendingCall{ch: make(chan reply, 1)}
	c.mu.Lock()
	c.nextID++
	id := "c" + strconv.FormatUint(c.nextID, 10)
	c.pending[id] = w
	c.mu.Unlock()
	data, err := fastjson.Marshal(request{JSONRPC: "2.0", Method: method, Params: params, ID: json.RawMessage(strconv.Quote(id))})
	if err != nil {
		c.forgetCall(id, w, fc)
		return incoming{}, fmt.Errorf("%s: encode params: %w", method, err)
	}
	if err := fc.writeMessage(ctx, data); err != nil {
		if !errors.Is(err, errBroken) && ctx.Err() != nil {
			// Given up before a byte went out: the connection is fine.
			c.forgetCall(id, w, fc)
			return incoming{}, fmt.Errorf("%s: %w", method, err)
		}
		c.lost(fc)
		return incoming{}, fmt.Errorf("%s: %w: %v", method, errLost, err)
	}
	c.mu.Lock()
	lead := false
	if _, ok := c.pending[id]; ok {
		if !c.reading && c.conn == fc {
			c.reading, lead = true, true
		} else {
			w.parked = true
		}
	}
	c.mu.Unlock()
	for {
		if lead {
			err := c.readFrames(ctx, fc, func(bool) bool { return len(w.ch) > 0 })
			if err == nil {
				c.handOn(fc)
			} else if ctx.Err() != nil && c.ctx.Err() == nil {
				// Given up with the token held: someone else reads on.
				c.forgetCall(id, w, fc)
				c.handOn(fc)
				return incoming{}, fmt.Errorf("%s: %w", method, ctx.Err())
			}
			lead = false
		}
		select {
		case r, ok := <-w.ch:
			if !ok {
				return incoming{}, fmt.Errorf("%s: %w", method, errLost)
			}
			if r.lead {
				lead = true
				continue
			}
			return r.in, nil
		case <-ctx.Done():
			c.forgetCall(id, w, fc)
			return incoming{}, fmt.Errorf("%s: %w", method, ctx.Err())
		}
	}
}

// forgetCall drops a call that will not wait for its answer; if it was
// just asked to read, the reading goes to someone else.
func (c *Client) forgetCall(id string, w *pendingCall, fc *clientConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[id] == w {
		delete(c.pending, id)
	}
	select {
	case r, ok := <-w.ch:
		if ok && r.lead {
			c.handOnLocked(fc)
		}
	default:
	}
}

// Notify sends a notification: no answer, no error from the server.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	c.mu.Lock()
	fc := c.conn
	c.mu.Unlock()
	if fc == nil {
		return fmt.Errorf("%s: not connected to bus %s", method, c.url)
	}
	data, err := json.Marshal(request{JSONRPC: "2.0", Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("%s: encode params: %w", method, err)
	}
	if err := fc.writeMessage(ctx, data); err != nil {
		if errors.Is(err, errBroken) {
			c.lost(fc)
		}
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// Subscribe subscribes to pattern; h answers each delivery (its Ack becomes
// the processMessage result). The subscription is renewed after a
// reconnect.
func (c *Client) Subscribe(ctx context.Context, pattern string, h bus.Handler, opts SubscribeOptions) error {
	if h == nil {
		return fmt.Errorf("subscribe to %q: nil handler", pattern)
	}
	// Record first so a delivery racing the response finds its handler.
	sub := &clientSub{pattern: pattern, h: h, opts: opts}
	c.mu.Lock()
	c.subs = append(c.subs, sub)
	c.mu.Unlock()
	err := c.Call(ctx, "subscribe", subscribeParams{Topic: &pattern, Policy: string(opts.Policy), Method: opts.Method}, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.subs = slices.DeleteFunc(c.subs, func(s *clientSub) bool { return s == sub })
		return fmt.Errorf("subscribe to %q: %w", pattern, err)
	}
	sub.active = true
	// Deliveries need a reader even while no call reads.
	if c.conn != nil && !c.reading {
		c.readInBackgroundLocked(c.conn)
	}
	return nil
}

// forget drops the newest active subscription to pattern.
func (c *Client) forget(pattern string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.subs) - 1; i >= 0; i-- {
		if c.subs[i].active && c.subs[i].pattern == pattern {
			c.subs = slices.Delete(c.subs, i, i+1)
			return
		}
	}
}

// Unsubscribe ends the subscription to pattern.
func (c *Client) Unsubscribe(ctx context.Context, pattern string) error {
	if err := c.Call(ctx, "unsubscribe", subscribeParams{Topic: &pattern}, nil); err != nil {
		return fmt.Errorf("unsubscribe from %q: %w", pattern, err)
	}
	c.forget(pattern)
	return nil
}

// SendMessage publishes payload on topic through the bus's interceptor walk
// and returns the subscribers' acks. payload is marshalled to JSON (a
// json.RawMessage is sent as is) and must be an object with a "type".
func (c *Client) SendMessage(ctx context.Context, topic string, payload any) (SendResult, error) {
	raw, ok := payload.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(payload); err != nil {
			return SendResult{}, fmt.Errorf("send to %s: encode payload: %w", topic, err)
		}
	}
	var res SendResult
	if err := c.Call(ctx, "sendMessage", sendParams{Topic: &topic, Payload: raw}, &res); err != nil {
		return res, fmt.Errorf("send to %s: %w", topic, err)
	}
	return res, nil
}

// Ping asks the server for its time.
func (c *Client) Ping(ctx context.Context) (time.Time, error) {
	var r pingResult
	if err := c.Call(ctx, "ping", struct{}{}, &r); err != nil {
		return time.Time{}, err
	}
	return time.Parse(time.RFC3339, r.Timestamp)
}

// Close closes the connection and stops reconnecting.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.idle.Stop()
	fc := c.conn
	c.mu.Unlock()
	c.cancel() // wakes a redial's wait
	if fc != nil {
		fc.close()
	}
	c.wg.Wait()
	return nil
}
