package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/coder/websocket"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/guard"
	"github.com/weavehq/weave/internal/fastjson"
)

// ClientIDHeader is the message header holding the clientId of the
// connection that sent the message. The server sets it on what its peers
// send; it names, it does not authorize: a message that came over NATS
// carries whatever its publisher wrote there.
const ClientIDHeader = "weave-client-id"

// Defaults for zero Options fields.
const (
	DefaultMaxFrameBytes    = 1 << 20
	DefaultMaxSubscriptions = 256
	// DefaultMaxConnections and DefaultMaxTotalSubscriptions bound the
	// whole server, whatever the number of peers.
	DefaultMaxConnections        = guard.DefaultMaxConnections
	DefaultMaxTotalSubscriptions = 16384
	DefaultAgentStartTimeout     = 30 * time.Second
	// DefaultMaxInFlight bounds the sendMessage requests one connection
	// may have running; past it the server stops reading that connection.
	DefaultMaxInFlight = 64
	maxClientID        = 256
)

// Options configure a Server.
type Options struct {
	// ServerID and ServerInfo are returned by initialize.
	ServerID   string
	ServerInfo ServerInfo
	// Topics is advertised in the initialize capabilities.
	Topics []string
	// RequirePayloadType refuses a sendMessage whose payload has no
	// string field type (config bus.require_payload_type). Off by default:
	// bub's publish helpers send payloads without one.
	RequirePayloadType bool
	// Token, when set, is the bus token: clients send it as
	// "Authorization: Bearer <token>". Beyond loopback every client must;
	// on loopback a client without it may still connect, but not use the
	// topics that change what a run does (bus.ProtectedPrefixes). NewServer
	// refuses a non-loopback server without one; a loopback server without
	// one trusts every peer.
	Token string
	// Loopback says the listener only accepts connections from this
	// machine; the caller decides it from the listen address (IsLoopback).
	Loopback bool
	// TokenFile names where the token is kept, for error messages.
	TokenFile string
	// MaxFrameBytes bounds one incoming frame (bus.max_frame_bytes); a
	// larger frame closes the connection with status 1009.
	MaxFrameBytes int64
	// MaxSubscriptions bounds the subscriptions of one connection
	// (bus.max_subscriptions).
	MaxSubscriptions int
	// MaxInFlight bounds the sendMessage requests, batch elements
	// included, one connection may have running (bus.max_in_flight,
	// default DefaultMaxInFlight); past it the server stops reading the
	// connection until one finishes.
	MaxInFlight int
	// MaxConnections bounds the open connections (bus.max_connections);
	// past it a handshake is answered 503.
	MaxConnections int
	// MaxGuestConnections bounds the connections without the token
	// together (bus.max_guest_connections); 0 means half of
	// MaxConnections, so however many a guest opens, token holders (the
	// host's hooks and agents, weave's own commands) still connect. Past
	// it a guest's handshake is answered 503 naming the limit.
	MaxGuestConnections int
	// MaxTotalSubscriptions bounds the subscriptions of all connections
	// together (bus.max_total_subscriptions).
	MaxTotalSubscriptions int
	// MaxGuestTopicsPerConnection bounds the retained and append-only
	// topics (those that count against bus.max_topics) one connection
	// without the token may send on; 0 means a tenth of the bus's
	// MaxTopics. MaxGuestTopics bounds them for all such connections
	// together, for the life of the server (kept topics outlive the
	// connection that made them); 0 means a quarter. So no peer without the
	// token can spend the topics the host and the envelope face need.
	MaxGuestTopicsPerConnection int
	MaxGuestTopics              int
	// MaxGuestSubscriptions bounds the subscriptions of all connections
	// without the token together; 0 means half of MaxTotalSubscriptions,
	// so the host's hooks and agents can still subscribe.
	MaxGuestSubscriptions int
	// OriginPatterns lists browser origins allowed besides the server's own
	// host (see websocket.AcceptOptions).
	OriginPatterns []string

	// AgentCommand is the default handler (bus.agent_command): when a
	// message finds no subscriber, the server starts it, waits up to
	// AgentStartTimeout for it to subscribe to the topic, then delivers.
	// Empty turns the default handler off.
	AgentCommand []string
	// AgentEnv is added to the agent's environment (KEY=VALUE).
	AgentEnv []string
	// Workspace is the agent's working directory and WEAVE_WORKSPACE.
	Workspace string
	// BusURL is the URL agents dial (WEAVE_BUS_URL).
	BusURL string
	// AgentStartTimeout bounds the wait for a started agent to subscribe.
	AgentStartTimeout time.Duration
	// AgentOutput receives the agents' stdout and stderr; nil discards.
	AgentOutput io.Writer
}

// Server is the JSON-RPC 2.0 WebSocket face of a bus. It implements
// http.Handler.
type Server struct {
	bus    bus.Bus
	opts   Options
	agents *launcher

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// subs counts the subscriptions of every connection, guestSubs those
	// of the connections without the token.
	subs      atomic.Int64
	guestSubs atomic.Int64
	// guestConns counts the connections without the token, from the
	// handshake to their end (reserveGuest).
	guestConns atomic.Int64
	// guests holds the kept topics that connections without the token
	// have sent on (guestTopics).
	guests guestTopics

	mu      sync.Mutex
	conns   map[*conn]struct{}
	waiters map[*waiter]struct{}
	closed  bool
}

// NewServer returns a server for b. It fails when the server would accept
// connections from other machines without a token.
func NewServer(b bus.Bus, opts Options) (*Server, error) {
	if !opts.Loopback && opts.Token == "" {
		return nil, errors.New("the bus WebSocket listens beyond loopback without a token: set bus.token (clients send it as a bearer token) or listen on 127.0.0.1")
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.MaxSubscriptions <= 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.MaxTotalSubscriptions <= 0 {
		opts.MaxTotalSubscriptions = DefaultMaxTotalSubscriptions
	}
	if opts.AgentStartTimeout <= 0 {
		opts.AgentStartTimeout = DefaultAgentStartTimeout
	}
	if opts.MaxGuestConnections <= 0 || opts.MaxGuestConnections >= opts.MaxConnections {
		opts.MaxGuestConnections = max(1, opts.MaxConnections/2)
	}
	if opts.MaxGuestSubscriptions <= 0 {
		opts.MaxGuestSubscriptions = max(1, opts.MaxTotalSubscriptions/2)
	}
	keep := busOptions(b)
	if opts.MaxGuestTopicsPerConnection <= 0 {
		opts.MaxGuestTopicsPerConnection = max(1, keep.MaxTopics/10)
	}
	if opts.MaxGuestTopics <= 0 {
		opts.MaxGuestTopics = max(1, keep.MaxTopics/4)
	}
	if opts.ServerID == "" {
		opts.ServerID = "weave-bus"
	}
	if opts.ServerInfo.Name == "" {
		opts.ServerInfo = ServerInfo{Name: "weave-bus", Version: "1"}
	}
	s := &Server{
		bus:     b,
		opts:    opts,
		conns:   make(map[*conn]struct{}),
		waiters: make(map[*waiter]struct{}),
	}
	s.guests = newGuestTopics(keep)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.agents = newLauncher(s)
	return s, nil
}

// ServeHTTP upgrades the request to a WebSocket and serves it until either
// side closes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// On loopback a peer that sends no token (bub's client) joins as a
	// guest; a wrong token is refused so that the mistake shows.
	trusted := guard.Authorized(r, s.opts.Token)
	if !trusted && (!s.opts.Loopback || r.Header.Get("Authorization") != "") {
		guard.Challenge(w)
		http.Error(w, guard.Refusal, http.StatusUnauthorized)
		return
	}
	if n := s.Connections(); n >= s.opts.MaxConnections {
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("the bus holds its limit of %d connections (bus.max_connections): close some or raise the limit", s.opts.MaxConnections), http.StatusServiceUnavailable)
		return
	}
	if !trusted {
		if !s.reserveGuest() {
			// Connection: close gives the socket back at once: a refused
			// guest must not keep a slot of the listener's cap either.
			w.Header().Set("Retry-After", "5")
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("the bus holds its limit of %d connections without the bus token (bus.max_guest_connections; the rest of bus.max_connections is kept for token holders): close some, connect with %s, or raise the limit", s.opts.MaxGuestConnections, s.tokenWhere()), http.StatusServiceUnavailable)
			return
		}
		defer s.guestConns.Add(-1)
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.opts.OriginPatterns})
	if err != nil {
		return // Accept has answered the client
	}
	ws.SetReadLimit(s.opts.MaxFrameBytes)
	c := s.newConn(ws, trusted)
	if c == nil {
		_ = ws.Close(websocket.StatusGoingAway, "bus is shutting down")
		return
	}
	c.serve()
}

// reserveGuest takes one of the connections kept for peers without the
// token, or reports that they are all taken.
func (s *Server) reserveGuest() bool {
	for {
		n := s.guestConns.Load()
		if n >= int64(s.opts.MaxGuestConnections) {
			return false
		}
		if s.guestConns.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// forbidden answers a peer without the token that reached for a protected
// topic. The protected topics are those whose traffic can change what a run
// does: hook decisions (hook:), agent requests and delegation (agent:) and
// the bus's own topics such as dead letters (system:), as the topic table
// says (bus.ProtectedPrefixes). On a server with a token, only peers that
// sent it may subscribe to a pattern that can match one of them
// (bus.PatternMayMatchProtected: by what it matches, so \hook:* is one) or
// send on one; other loopback peers keep every other topic.
func (s *Server) forbidden(what, topic string) *Error {
	return errorf(CodeForbidden, "forbidden: %s %q needs the bus token: %s topics change what a run does; connect with Authorization: Bearer <token>, %s",
		what, topic, strings.Join(bus.ProtectedPrefixes(), ", "), s.tokenWhere())
}

// tokenWhere says where a peer finds the bus token.
func (s *Server) tokenWhere() string {
	if s.opts.TokenFile != "" {
		return "the bus token in " + s.opts.TokenFile
	}
	return "the bus token (bus.token or WEAVE_BUS_TOKEN)"
}

// Close closes every connection and stops the agents the server started.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// Close handshakes run in parallel: a dead peer costs its own timeout,
	// not everyone's.
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.ws.Close(websocket.StatusGoingAway, "bus is shutting down")
		}()
	}
	wg.Wait()
	s.cancel()
	s.agents.stopAll()
	s.wg.Wait()
	return nil
}

// Connections returns the number of open connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) newConn(ws *websocket.Conn, trusted bool) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	c := &conn{
		s:       s,
		ws:      ws,
		trusted: trusted,
		subs:    make(map[string]bus.Subscription),
		pending: make(map[string]chan incoming),
		notes:   make(chan incoming, s.opts.MaxInFlight),
		sem:     make(chan struct{}, s.opts.MaxInFlight),
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return c
}

// conn is one client connection.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	wg     sync.WaitGroup
	notes  chan incoming // notifications, handled in order
	sem    chan struct{} // bounds the works off the read loop
	// readDone is closed by the reader that sees the connection end.
	readDone chan struct{}
	rbuf     bytes.Buffer // the current reader's frame
	// trusted says the peer sent the bus token (or the server has none):
	// only then may it use protected topics.
	trusted bool

	initialized atomic.Bool
	clientID    string // set once, by the first initialize

	mu      sync.Mutex
	subs    map[string]bus.Subscription // by pattern
	pending map[string]chan incoming    // our calls awaiting a response
	nextID  uint64
	// topics holds the kept topics this connection, without the token,
	// has sent on (spendTopic).
	topics map[uint64]struct{}
}

func (c *conn) serve() {
	defer c.s.wg.Done()
	c.wg.Add(1)
	go c.handleNotifications()
	c.readDone = make(chan struct{})
	c.read()
	<-c.readDone
	c.shutdown()
}

// read reads frames until one needs work off the read loop (a sendMessage
// request or a batch). It then starts a new reader and does that work on
// its own goroutine, so the answer is written without a hand-off between
// goroutines. At most Options.MaxInFlight such works run at once.
//
// Reads and response writes use a context that never ends: a cancellable
// one costs the WebSocket library a registration per frame. Wherever c.ctx
// is cancelled the connection is closed too, which ends them.
func (c *conn) read() {
	for {
		data, err := c.readFrame()
		if err != nil {
			close(c.readDone) // closed, oversize (closed with 1009) or broken
			return
		}
		work := c.handleFrame(data)
		if work == nil {
			continue
		}
		if c.publisherOnly() {
			// Nothing can call this connection, so its read loop is not
			// needed while the walk runs: answer here, in order.
			work()
			continue
		}
		select {
		case c.sem <- struct{}{}:
		case <-c.ctx.Done():
			close(c.readDone)
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.read()
		}()
		work()
		<-c.sem
		return
	}
}

// readFrame reads one frame into the connection's buffer, which is kept
// for the next frame unless it grew large. Only the current reader calls
// it, and handleFrame copies what outlives the frame.
func (c *conn) readFrame() ([]byte, error) {
	_, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	if c.rbuf.Cap() > 64<<10 {
		c.rbuf = bytes.Buffer{}
	}
	c.rbuf.Reset()
	if _, err := c.rbuf.ReadFrom(r); err != nil {
		return nil, err
	}
	return c.rbuf.Bytes(), nil
}

func (c *conn) shutdown() {
	c.cancel()
	_ = c.ws.CloseNow()
	c.mu.Lock()
	subs := c.subs
	c.subs = map[string]bus.Subscription{}
	c.mu.Unlock()
	for _, sub := range subs {
		_ = sub.Unsubscribe()
	}
	c.s.subs.Add(-int64(len(subs)))
	if !c.trusted {
		c.s.guestSubs.Add(-int64(len(subs)))
	}
	close(c.notes)
	c.wg.Wait()
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
}

// write sends a response. It is not timed (a deadline costs a timer per
// frame): a peer that stops reading stalls only its own connection, which
// ends when the peer or the server closes it.
func (c *conn) write(v any) {
	c.writeCtx(context.Background(), v)
}

// writeCtx sends v; ctx bounds the write of a delivery (a cancelled write
// closes the connection).
func (c *conn) writeCtx(ctx context.Context, v any) {
	data, err := fastjson.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(errorResponse(nil, errorf(CodeInternal, "internal error: encode response: %v", err)))
	}
	if err := c.ws.Write(ctx, websocket.MessageText, data); err != nil && ctx.Err() == nil && c.ctx.Err() == nil {
		// A peer that cannot take frames is gone.
		c.cancel()
		_ = c.ws.CloseNow()
	}
}

// publisherOnly reports whether the connection has no subscriptions, so
// no delivery can wait for a response on it.
func (c *conn) publisherOnly() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs) == 0
}

// handleFrame handles what is quick and returns the rest as work.
func (c *conn) handleFrame(data []byte) (work func()) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		in, ok := parseIncoming(trimmed)
		switch {
		case !ok:
			c.write(errorResponse(nil, errorf(CodeParseError, "parse error: the frame is not valid JSON")))
		case in.invalid != nil:
			c.write(errorResponse(in.id, in.invalid))
		case in.response:
			c.deliverResponse(in)
		case in.notification():
			select {
			case c.notes <- in:
			case <-c.ctx.Done():
			}
		case inline(in.method):
			if resp := c.handle(in); resp != nil {
				c.write(resp)
			}
		default:
			return func() {
				if resp := c.handle(in); resp != nil {
					c.write(resp)
				}
			}
		}
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(trimmed, &elems); err != nil {
		c.write(errorResponse(nil, errorf(CodeParseError, "parse error: %v", err)))
		return nil
	}
	if len(elems) == 0 {
		c.write(errorResponse(nil, errorf(CodeInvalidRequest, "invalid request: empty batch")))
		return nil
	}
	c.handleBatch(elems)
	return nil
}

// inline methods are quick and answered in the read loop, so they take
// effect in the order they were sent: a subscribe sent before a
// sendMessage is in place when the sendMessage runs. Only sendMessage,
// which waits for subscribers, runs on its own goroutine.
func inline(method string) bool { return method != "sendMessage" }

func (c *conn) handleNotifications() {
	defer c.wg.Done()
	for in := range c.notes {
		if c.ctx.Err() == nil {
			c.handle(in)
		}
	}
}

// handleBatch answers a batch with one array of the responses to its
// requests, in order; notifications and responses get no entry, and a batch
// of only those gets no reply. It runs in the read loop: each sendMessage
// of the batch takes one of the connection's MaxInFlight slots, so a batch
// of 5,000 counts 5,000 and the loop stops reading while they are taken.
// The other methods are quick and run here, in order.
func (c *conn) handleBatch(elems []json.RawMessage) {
	out := make([]*response, len(elems))
	var wg sync.WaitGroup
	for i, raw := range elems {
		in, _ := parseIncoming(raw) // elements of a parsed array are valid JSON
		switch {
		case in.invalid != nil:
			out[i] = errorResponse(in.id, in.invalid)
		case in.response:
			c.deliverResponse(in)
		case inline(in.method):
			if resp := c.handle(in); resp != nil {
				out[i] = resp
			}
		default:
			select {
			case c.sem <- struct{}{}:
			case <-c.ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer func() { <-c.sem; wg.Done() }()
				if resp := c.handle(in); resp != nil {
					out[i] = resp
				}
			}()
		}
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		wg.Wait()
		var resps []*response
		for _, r := range out {
			if r != nil {
				resps = append(resps, r)
			}
		}
		if len(resps) > 0 {
			c.write(resps)
		}
	}()
}

// handle runs one request or notification; the response is nil for a
// notification.
func (c *conn) handle(in incoming) *response {
	result, rerr := c.dispatch(in)
	if in.notification() {
		return nil
	}
	if rerr != nil {
		return errorResponse(in.id, rerr)
	}
	return resultResponse(in.id, result)
}

func (c *conn) dispatch(in incoming) (any, *Error) {
	switch in.method {
	case "initialize":
		return c.initialize(in.params)
	}
	// ping too waits for the handshake: bub's server answers it -32001
	// before initialize, and its clients expect that.
	if !c.initialized.Load() {
		return nil, &Error{Code: CodeNotInitialized, Message: "Not initialized", Data: "send initialize first"}
	}
	switch in.method {
	case "ping":
		return pingResult{Timestamp: time.Now().UTC().Format(time.RFC3339)}, nil
	case "subscribe":
		return c.subscribe(in.params)
	case "unsubscribe":
		return c.unsubscribe(in.params)
	case "sendMessage":
		return c.sendMessage(in.params)
	}
	return nil, errorf(CodeMethodNotFound, "method not found: %q (methods: initialize, ping, subscribe, unsubscribe, sendMessage)", in.method)
}

func decodeParams(raw json.RawMessage, v any) *Error {
	if len(raw) == 0 {
		return errorf(CodeInvalidParams, "invalid params: params object missing")
	}
	if firstByte(raw) != '{' {
		return errorf(CodeInvalidParams, "invalid params: params must be an object")
	}
	if err := fastjson.Unmarshal(raw, v); err != nil {
		return errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func (c *conn) initialize(raw json.RawMessage) (any, *Error) {
	var p initializeParams
	if e := decodeParams(raw, &p); e != nil {
		return nil, errorf(CodeInvalidClientInfo, "invalid client info: %s", e.Message)
	}
	if why := validClientID(p.ClientID); why != "" {
		return nil, errorf(CodeInvalidClientInfo, "invalid client info: clientId %s", why)
	}
	// clientInfo is informational: null or absent is fine (bub's client
	// sends null), and so is an object with any fields. Only a value that
	// is not an object is refused.
	if info := bytes.TrimSpace(p.ClientInfo); len(info) > 0 && !bytes.Equal(info, []byte("null")) && info[0] != '{' {
		return nil, errorf(CodeInvalidClientInfo, "invalid client info: clientInfo must be an object such as {\"name\":\"my-client\",\"version\":\"1\"} or null")
	}
	// The read loop runs initialize, so there is no race between two. A
	// second initialize answers like the first, as bub's server does; the
	// connection keeps the clientId it started with, which names its
	// subscriptions and the messages it sent.
	if !c.initialized.Load() {
		c.clientID = p.ClientID
		c.initialized.Store(true)
	}
	topics := c.s.opts.Topics
	if topics == nil {
		topics = []string{}
	}
	return InitializeResult{
		ServerID:   c.s.opts.ServerID,
		ServerInfo: c.s.opts.ServerInfo,
		Capabilities: Capabilities{
			Subscribe: true, Publish: true, ProcessMessage: true, Topics: topics,
		},
	}, nil
}

func validClientID(id string) string {
	if id == "" {
		return "is missing"
	}
	if len(id) > maxClientID {
		return "is longer than " + strconv.Itoa(maxClientID) + " bytes"
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Sprintf("%q holds a space or control character", id)
		}
	}
	return ""
}

func (c *conn) subscribe(raw json.RawMessage) (any, *Error) {
	var p subscribeParams
	if e := decodeParams(raw, &p); e != nil {
		return nil, e
	}
	if p.Topic == nil || *p.Topic == "" {
		return nil, errorf(CodeInvalidParams, "invalid params: missing topic")
	}
	pattern := *p.Topic
	if err := bus.ValidatePattern(pattern); err != nil {
		return nil, errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	policy, err := bus.ParsePolicy(p.Policy)
	if err != nil {
		return nil, errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	if !c.trusted && bus.PatternMayMatchProtected(pattern) {
		return nil, c.s.forbidden("subscribe to", pattern)
	}
	method := p.Method
	switch method {
	case "":
		method = "sendMessage"
	case "sendMessage", "processMessage":
	default:
		return nil, errorf(CodeInvalidParams, "invalid params: method %q: use sendMessage or processMessage", method)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.subs[pattern]; dup {
		// Idempotent: the same subscription stays, as in bub's server.
		return map[string]bool{"success": true}, nil
	}
	if len(c.subs) >= c.s.opts.MaxSubscriptions {
		return nil, errorf(CodeLimit, "limit of %d subscriptions per connection reached (bus.max_subscriptions): unsubscribe from one first", c.s.opts.MaxSubscriptions)
	}
	if c.s.subs.Add(1) > int64(c.s.opts.MaxTotalSubscriptions) {
		c.s.subs.Add(-1)
		return nil, errorf(CodeLimit, "the bus holds its limit of %d subscriptions over all connections (bus.max_total_subscriptions): unsubscribe from some or raise the limit", c.s.opts.MaxTotalSubscriptions)
	}
	if !c.trusted && c.s.guestSubs.Add(1) > int64(c.s.opts.MaxGuestSubscriptions) {
		c.s.guestSubs.Add(-1)
		c.s.subs.Add(-1)
		return nil, errorf(CodeLimit, "connections without the bus token hold their limit of %d subscriptions (half of bus.max_total_subscriptions, the rest kept for the host): unsubscribe from some, or connect with %s", c.s.opts.MaxGuestSubscriptions, c.s.tokenWhere())
	}
	// The handler waits for the peer's answer, its context or the end of
	// the connection, so it is cooperative: a Request calls it without a
	// goroutine of its own.
	sub, err := c.s.bus.Subscribe(c.ctx, pattern, c.handler(pattern, method),
		bus.SubscribeOptions{Name: c.clientID, Policy: policy, Cooperative: true})
	if err != nil {
		c.s.subs.Add(-1)
		if !c.trusted {
			c.s.guestSubs.Add(-1)
		}
		return nil, errorf(CodeInternal, "internal error: subscribe to %q: %v", pattern, err)
	}
	c.subs[pattern] = sub
	c.s.subscribed(pattern)
	return map[string]bool{"success": true}, nil
}

func (c *conn) unsubscribe(raw json.RawMessage) (any, *Error) {
	var p subscribeParams
	if e := decodeParams(raw, &p); e != nil {
		return nil, e
	}
	if p.Topic == nil || *p.Topic == "" {
		return nil, errorf(CodeInvalidParams, "invalid params: missing topic")
	}
	c.mu.Lock()
	sub, ok := c.subs[*p.Topic]
	delete(c.subs, *p.Topic)
	c.mu.Unlock()
	if ok {
		c.s.subs.Add(-1)
		if !c.trusted {
			c.s.guestSubs.Add(-1)
		}
	}
	if !ok {
		return nil, errorf(CodeSubscriptionNotFound, "subscription not found: this connection is not subscribed to %q (pass the exact topic given to subscribe)", *p.Topic)
	}
	if err := sub.Unsubscribe(); err != nil {
		return nil, errorf(CodeInternal, "internal error: unsubscribe from %q: %v", *p.Topic, err)
	}
	return map[string]bool{"success": true}, nil
}

func (c *conn) sendMessage(raw json.RawMessage) (any, *Error) {
	var p sendParams
	if e := decodeParams(raw, &p); e != nil {
		return nil, e
	}
	if p.Topic == nil || *p.Topic == "" {
		return nil, errorf(CodeInvalidParams, "invalid params: missing topic")
	}
	if err := bus.ValidateTopic(*p.Topic); err != nil {
		return nil, errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	if !c.trusted && bus.ProtectedTopic(*p.Topic) {
		return nil, c.s.forbidden("send on", *p.Topic)
	}
	if e := checkPayload(p.Payload, c.s.opts.RequirePayloadType); e != nil {
		return nil, e
	}
	if !c.trusted {
		if e := c.spendTopic(*p.Topic); e != nil {
			return nil, e
		}
	}
	m := bus.Message{Topic: *p.Topic, Payload: p.Payload, Headers: p.Headers, IdempotencyKey: p.IdempotencyKey}
	if m.Headers == nil {
		m.Headers = map[string]string{}
	}
	// Set by the server, never taken from the peer: subscribers can trust it.
	m.Headers[ClientIDHeader] = c.clientID
	res, err := c.s.request(c.ctx, m)
	if errors.Is(err, bus.ErrLimit) {
		return nil, errorf(CodeLimit, "%v", err)
	}
	if err != nil {
		return nil, errorf(CodeInternal, "internal error: %v", err)
	}
	return sendResultOf(res), nil
}

// checkPayload accepts any object; with requireType it also wants a
// non-empty string payload.type, as the seed document asks (bub's own
// publish helpers send none).
func checkPayload(raw json.RawMessage, requireType bool) *Error {
	if len(raw) == 0 || firstByte(raw) != '{' {
		return errorf(CodeInvalidParams, "invalid params: payload must be a JSON object")
	}
	if !requireType {
		return nil
	}
	var p struct {
		Type *string `json:"type"`
	}
	if err := fastjson.Unmarshal(raw, &p); err != nil || p.Type == nil || *p.Type == "" {
		return errorf(CodeInvalidParams, `invalid params: payload.type is required (a string such as "plaintext_message")`)
	}
	return nil
}

// request is sendMessage's walk, with the default handler when nobody
// matched.
func (s *Server) request(ctx context.Context, m bus.Message) (bus.Result, error) {
	res, err := s.bus.Request(ctx, m)
	if err != nil || res.Delivered > 0 || res.Duplicate || res.Offset > 0 || !s.agents.handles(m.Topic) {
		return res, err
	}
	if err := s.agents.ensure(ctx, m.Topic); err != nil {
		return res, err
	}
	// The idempotency key was recorded by the first walk; the message is
	// the same one, not a repeat.
	m.ID, m.IdempotencyKey = res.MessageID, ""
	return s.bus.Request(ctx, m)
}

// handler makes this connection's subscription a bus handler: each
// delivery is a call to the peer, answered or failed when the peer goes.
func (c *conn) handler(pattern, method string) bus.Handler {
	return func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		d := Delivery{Topic: m.Topic, Payload: m.Payload, MessageID: m.ID, Attempt: m.Attempt, Headers: m.Headers, Subscription: pattern}
		in, err := c.call(ctx, method, d)
		if err != nil {
			return bus.Ack{}, err
		}
		if in.err != nil {
			return bus.Ack{}, fmt.Errorf("subscriber %s answered %s with an error: %w", c.clientID, method, in.err)
		}
		var r AckResult
		if err := json.Unmarshal(in.result, &r); err != nil {
			return bus.Ack{}, fmt.Errorf("subscriber %s sent a malformed %s result: %w", c.clientID, method, err)
		}
		return r.ack(c.clientID), nil
	}
}

// call sends a request to the peer and waits for its response, the end of
// ctx or the end of the connection.
func (c *conn) call(ctx context.Context, method string, params any) (incoming, error) {
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return incoming{}, fmt.Errorf("subscriber %s is disconnected", c.clientID)
	}
	c.nextID++
	id := "s" + strconv.FormatUint(c.nextID, 10)
	ch := make(chan incoming, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	// The delivery's context bounds the write: a peer that does not read
	// cannot hold the walk past the subscriber timeout.
	c.writeCtx(ctx, request{JSONRPC: "2.0", Method: method, Params: params, ID: json.RawMessage(strconv.Quote(id))})
	select {
	case in := <-ch:
		return in, nil
	case <-ctx.Done():
		return incoming{}, fmt.Errorf("%s to %s: %w", method, c.clientID, ctx.Err())
	case <-c.ctx.Done():
		return incoming{}, fmt.Errorf("subscriber %s disconnected before answering %s", c.clientID, method)
	}
}

func (c *conn) deliverResponse(in incoming) {
	var id string
	if json.Unmarshal(in.id, &id) != nil {
		return // not one of ours: ours are strings
	}
	c.mu.Lock()
	ch := c.pending[id]
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- in:
		default: // answered twice; the first answer counts
		}
	}
}

// waiter is a default-handler start waiting for a subscription to topic.
type waiter struct {
	topic string
	ch    chan struct{}
	once  sync.Once
}

func (s *Server) waitFor(topic string) (*waiter, func()) {
	w := &waiter{topic: topic, ch: make(chan struct{})}
	s.mu.Lock()
	s.waiters[w] = struct{}{}
	s.mu.Unlock()
	return w, func() {
		s.mu.Lock()
		delete(s.waiters, w)
		s.mu.Unlock()
	}
}

func (s *Server) subscribed(pattern string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.waiters {
		if bus.Match(pattern, w.topic) {
			w.once.Do(func() { close(w.ch) })
		}
	}
}
