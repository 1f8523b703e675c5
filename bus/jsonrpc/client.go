package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

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
type Client struct {
	url       string
	info      ClientInfo
	id        string
	token     string
	reconnect bool
	maxFrame  int64

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	ws      *websocket.Conn // nil while reconnecting
	ready   chan struct{}   // closed when ws is usable
	pending map[string]chan incoming
	nextID  uint64
	subs    []*clientSub
	server  InitializeResult
	conns   int // connections made, for tests and logs
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
	c := &Client{url: url, info: info, reconnect: true, maxFrame: DefaultMaxFrameBytes, pending: make(map[string]chan incoming)}
	for _, o := range opts {
		o(c)
	}
	if c.id == "" {
		c.id = info.Name + "-" + newAgentID()[len("agent-"):]
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ready = make(chan struct{})
	ws, err := c.connect(ctx)
	if err != nil {
		c.cancel()
		return nil, err
	}
	c.wg.Add(1)
	go c.run(ws)
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

// connect dials, initializes and re-subscribes; on success ws is live.
func (c *Client) connect(ctx context.Context) (*websocket.Conn, error) {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	ws, resp, err := websocket.Dial(ctx, c.url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, fmt.Errorf("dial bus %s: unauthorized: pass the bus token (WEAVE_BUS_TOKEN)", c.url)
		}
		return nil, fmt.Errorf("dial bus %s: %w", c.url, err)
	}
	ws.SetReadLimit(c.maxFrame)
	// Until the read loop runs, responses are read here.
	init := func(method string, params, result any) error {
		id := "init"
		data, _ := json.Marshal(request{JSONRPC: "2.0", Method: method, Params: params, ID: json.RawMessage(strconv.Quote(id))})
		if err := ws.Write(ctx, websocket.MessageText, data); err != nil {
			return err
		}
		for {
			_, frame, err := ws.Read(ctx)
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
					_ = ws.Write(ctx, websocket.MessageText, data)
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
		_ = ws.CloseNow()
		return nil, fmt.Errorf("initialize with bus %s: %w", c.url, err)
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
			_ = ws.CloseNow()
			return nil, fmt.Errorf("subscribe again to %q on bus %s: %w", s.pattern, c.url, err)
		}
	}
	c.mu.Lock()
	c.ws = ws
	c.server = server
	c.conns++
	close(c.ready)
	c.mu.Unlock()
	return ws, nil
}

// run reads frames until the connection ends, then reconnects.
func (c *Client) run(ws *websocket.Conn) {
	defer c.wg.Done()
	for {
		c.read(ws)
		c.mu.Lock()
		c.ws = nil
		c.ready = make(chan struct{})
		for id, ch := range c.pending {
			close(ch) // the call fails; the server will not answer on a new connection
			delete(c.pending, id)
		}
		c.mu.Unlock()
		if !c.reconnect || c.ctx.Err() != nil {
			return
		}
		var err error
		ws, err = c.redial()
		if err != nil {
			return // closed
		}
	}
}

func (c *Client) redial() (*websocket.Conn, error) {
	wait := 50 * time.Millisecond
	for {
		ws, err := c.connect(c.ctx)
		if err == nil {
			return ws, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return nil, ErrClientClosed
		}
		wait = min(wait*2, 2*time.Second)
	}
}

func (c *Client) read(ws *websocket.Conn) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		_, frame, err := ws.Read(c.ctx)
		if err != nil {
			_ = ws.CloseNow()
			return
		}
		trimmed := bytes.TrimSpace(frame)
		var elems []json.RawMessage
		if len(trimmed) > 0 && trimmed[0] == '[' {
			if json.Unmarshal(trimmed, &elems) != nil {
				continue
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
			default:
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.serveCall(ws, in)
				}()
			}
		}
	}
}

func (c *Client) deliverResponse(in incoming) {
	var id string
	if json.Unmarshal(in.id, &id) != nil {
		return
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- in
	}
}

// serveCall answers a delivery from the server with the subscription's
// handler.
func (c *Client) serveCall(ws *websocket.Conn, in incoming) {
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
	_ = ws.Write(c.ctx, websocket.MessageText, data)
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
		ws, ready := c.ws, c.ready
		c.mu.Unlock()
		if c.ctx.Err() != nil {
			return ErrClientClosed
		}
		if ws == nil {
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
		in, err := c.roundTrip(ctx, ws, method, params)
		if errors.Is(err, errLost) && c.reconnect {
			return fmt.Errorf("%s: connection to bus %s lost before the answer; it may or may not have run", method, c.url)
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

func (c *Client) roundTrip(ctx context.Context, ws *websocket.Conn, method string, params any) (incoming, error) {
	c.mu.Lock()
	c.nextID++
	id := "c" + strconv.FormatUint(c.nextID, 10)
	ch := make(chan incoming, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	data, err := fastjson.Marshal(request{JSONRPC: "2.0", Method: method, Params: params, ID: json.RawMessage(strconv.Quote(id))})
	if err != nil {
		forget()
		return incoming{}, fmt.Errorf("%s: encode params: %w", method, err)
	}
	if err := ws.Write(ctx, websocket.MessageText, data); err != nil {
		forget()
		return incoming{}, fmt.Errorf("%s: %w: %v", method, errLost, err)
	}
	select {
	case in, ok := <-ch:
		if !ok {
			return incoming{}, fmt.Errorf("%s: %w", method, errLost)
		}
		return in, nil
	case <-ctx.Done():
		forget()
		return incoming{}, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify sends a notification: no answer, no error from the server.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	if ws == nil {
		return fmt.Errorf("%s: not connected to bus %s", method, c.url)
	}
	data, err := json.Marshal(request{JSONRPC: "2.0", Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("%s: encode params: %w", method, err)
	}
	return ws.Write(ctx, websocket.MessageText, data)
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
	c.cancel() // first, so the read loop does not reconnect
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	if ws != nil {
		_ = ws.CloseNow()
	}
	c.wg.Wait()
	return nil
}
