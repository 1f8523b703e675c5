package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weavehq/weave/bus"
)

// Options configures a Broker. The zero value is usable.
type Options struct {
	// Bus is where sessions, agents and events live (see the package
	// documentation); nil gives the broker an in-process memory bus of its
	// own. Brokers on one shared bus (a nats backend, or one memory bus in
	// a process) serve the same sessions.
	Bus bus.Bus
	// MaxFrameBytes caps one socket line or one HTTP body (default 1 MiB).
	MaxFrameBytes int
	// IdempotencyWindow is how many idempotency keys are remembered per
	// session and command type, and how many finished actions per session
	// (default 10000).
	IdempotencyWindow int
	// QueueLen bounds each connection's and stream's outgoing queue; a
	// consumer that falls this far behind is disconnected (default 4096).
	QueueLen int
	// KeepClosed is how many closed sessions stay readable (history, list)
	// before the oldest is forgotten (default 100).
	KeepClosed int
	// MaxSessions bounds the open sessions (bus.max_sessions, default
	// 1000); session.create past it answers CodeLimit until one closes.
	MaxSessions int
	// MaxSessionsPerConnection bounds the open sessions one socket
	// connection created (default half of MaxSessions, at least 1), so one
	// client cannot take every session the bus holds.
	MaxSessionsPerConnection int
	// Token, when set, is the bus token the HTTP face asks of the commands
	// that change what a session's agents do (every command but the reads,
	// see ReadOnly): sent as "Authorization: Bearer <token>". Reads stay
	// open, as plain topics do on the JSON-RPC face. `weave bus serve` sets
	// it to the token it creates on loopback; a configured bus.token guards
	// every request instead, in front of the face. The Unix socket needs
	// no token: its mode (0600) is its access control.
	Token string
	// TokenFile names where peers find Token, for the error a peer without
	// it gets.
	TokenFile string
	// MaxGuestStreams bounds the event streams the HTTP face serves at
	// once to requests without Token (bus.max_guest_connections); 0 means
	// no bound. A stream holds its connection for as long as it lasts, so
	// without it peers that need no token could hold every connection of
	// the face's listener.
	MaxGuestStreams int
	// Logger receives transport and bus errors (default slog.Default()).
	Logger *slog.Logger
	// Now returns the current time (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = 1 << 20
	}
	if o.IdempotencyWindow <= 0 {
		o.IdempotencyWindow = 10000
	}
	if o.QueueLen <= 0 {
		o.QueueLen = 4096
	}
	if o.KeepClosed <= 0 {
		o.KeepClosed = 100
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	if o.MaxSessionsPerConnection <= 0 {
		o.MaxSessionsPerConnection = max(1, o.MaxSessions/2)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Broker is the v1 envelope face of a bus: sessions, agents,
// conversations, actions and each session's event log live on the bus, and
// the broker keeps a view of them read from there. The Unix socket and
// HTTP faces are thin transports over it, so both see the same events.
type Broker struct {
	opts   Options
	bus    bus.Bus
	ownBus bool
	// origin marks the events this broker writes, so that it does not
	// read its own writes back.
	origin string
	hdr    map[string]string
	subs   []bus.Subscription

	mu       sync.Mutex
	sessions map[string]*session
	order    []string // session ids in creation order
	closed   []string // closed session ids, oldest first
	index    uint64   // offsets of IndexTopic applied
	idem     *idemWindow

	stamps stamper // ids and ts of what the broker writes

	// guestStreams counts the event streams served without the token.
	guestStreams atomic.Int64
}

// NewBroker returns a broker on a memory bus of its own (opts.Bus is
// ignored; use Open to serve a shared bus).
func NewBroker(opts Options) *Broker {
	bo := bus.DefaultOptions()
	bo.Retained, bo.AppendOnly = RetainedTopics(), AppendOnlyTopics()
	mb, err := bus.NewMemory(bo)
	if err == nil {
		var b *Broker
		if b, err = Open(context.Background(), mb, opts); err == nil {
			b.ownBus = true
			return b
		}
	}
	// A fresh memory bus with static options cannot fail to open or
	// subscribe; reaching here is a bug.
	panic(fmt.Sprintf("envelope: new broker on a memory bus: %v", err))
}

// Open returns a broker serving the sessions on bus bb. bb must keep the
// face's topics (AppendOnlyTopics append-only, RetainedTopics retained);
// bus.DefaultOptions does. Close stops it; bb stays open.
func Open(ctx context.Context, bb bus.Bus, opts Options) (*Broker, error) {
	opts = opts.withDefaults()
	opts.Bus = bb
	b := &Broker{
		opts:     opts,
		bus:      bb,
		origin:   NewID(),
		sessions: make(map[string]*session),
		idem:     newIdemWindow(opts.IdempotencyWindow),
	}
	b.hdr = map[string]string{originHeader: b.origin}
	if err := b.checkTopics(ctx); err != nil {
		return nil, err
	}
	// Subscribe before reading, so nothing written in between is missed.
	for _, pattern := range []string{EventsTopicPrefix, IndexTopic} {
		sub, err := bb.Subscribe(ctx, pattern, b.onBusEvent, bus.SubscribeOptions{Name: "weave.envelope", Observer: true,
			// Its own writes are applied as they are made.
			Accept: func(m bus.Message) bool { return m.Headers[originHeader] != b.origin }})
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("envelope face: subscribe to %s: %w", pattern, err)
		}
		b.subs = append(b.subs, sub)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.catchUpIndex(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close stops following the bus; a bus the broker made for itself is
// closed too.
func (b *Broker) Close() error {
	for _, s := range b.subs {
		_ = s.Unsubscribe()
	}
	if b.ownBus {
		return b.bus.Close()
	}
	return nil
}

type session struct {
	info    SessionInfo
	topic   string   // EventsTopicPrefix + the id
	agents  []*agent // join order
	seq     int64    // the last event applied: its offset on the session's topic
	streams map[*stream]struct{}
	idem    *idemWindow
	// applyNext is catchUp's callback, made once.
	applyNext func(off uint64, m bus.Message) bool

	// Actions are remembered until they finish and then for the last
	// keepDone finished ones, which bounds memory on long sessions.
	actions     map[string]*actionState // group_id + "\x00" + action_id
	actionByID  map[string]*actionState
	actionOrder []*actionState // unfinished, in submission order
	done        []*actionState // finished, oldest first
	keepDone    int
	groups      map[string]int         // group_id -> remembered actions
	owners      map[string]string      // context_id -> owner agent id
	relays      map[string]*relayState // relay_id -> its progress
}

func newSessionState(info SessionInfo, keep int) *session {
	return &session{
		info:       info,
		topic:      EventsTopicPrefix + info.ID,
		streams:    make(map[*stream]struct{}),
		idem:       newIdemWindow(keep),
		actions:    make(map[string]*actionState),
		actionByID: make(map[string]*actionState),
		keepDone:   keep,
		groups:     make(map[string]int),
		owners:     make(map[string]string),
		relays:     make(map[string]*relayState),
	}
}

type agent struct {
	info  AgentInfo
	sinks map[*conn]struct{}
}

type actionState struct {
	action    Action
	groupID   string
	submitter string
	target    string
	status    string
	terminal  bool
	event     *Envelope // the per-target action.submit event carrying it
}

// relayState follows one relay from its first relay.submit until its
// owner ends it.
type relayState struct {
	owner string
	done  bool
}

// stream is one follower of a session's events: an events.stream on a
// connection (corr set, events wrapped in events.record) or an SSE response.
type stream struct {
	out  *outbox
	corr string
	// sse streams end when the session closes; socket streams just stop.
	sse bool
	// agent, when set, keeps only the events routed to that agent.
	agent string
}

// addressedTo reports whether ev is routed to agent id: it names the agent
// as dst, or it has no dst and comes from someone else.
func addressedTo(ev Envelope, id string) bool {
	if ev.Dst != "" {
		return ev.Dst == id
	}
	return ev.Src != id
}

// errorf builds a protocol error with a code clients can switch on.
func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Handle runs one envelope through the broker without a transport and
// returns its reply. Events it causes reach the connected faces as usual.
// events.stream needs a transport and is refused here.
func (b *Broker) Handle(ctx context.Context, env Envelope) []Envelope {
	return []Envelope{b.serve(ctx, nil, env)}
}

// serve handles env for connection c (nil for stateless callers), pushes the
// reply to c and returns it.
func (b *Broker) serve(ctx context.Context, c *conn, env Envelope) Envelope {
	b.mu.Lock()
	defer b.mu.Unlock()
	reply, post := b.dispatch(ctx, c, env)
	if c != nil {
		// The connection's reader flushes right after serve returns.
		c.out.pushQuiet(reply)
	}
	if post != nil {
		post()
	}
	return reply
}

// dispatch validates env and runs its command; it returns the reply and an
// optional step to run after the reply is queued. b.mu is held.
func (b *Broker) dispatch(ctx context.Context, c *conn, env Envelope) (Envelope, func()) {
	env.Payload = normalizePayload(env.Payload)
	if err := checkEnvelope(env); err != nil {
		return b.errorReply(env, err), nil
	}
	// Duplicate suppression: a command repeated with the same key gets the
	// first reply again and changes nothing. It comes before the seq check
	// so that a client may resend the very same envelope.
	win, key := b.idemScope(env)
	if key != "" {
		if prev, ok := win.get(key); ok {
			if c != nil && env.Seq > c.lastSeq {
				c.lastSeq = env.Seq
			}
			prev.ID = b.stamps.id()
			prev.TS = b.stamps.ts(b.opts.Now())
			prev.Corr = env.ID
			prev.Dst = env.Src
			prev.Status = StatusDuplicate
			return prev, nil
		}
	}
	if c != nil && env.Seq != 0 {
		if env.Seq <= c.lastSeq {
			return b.errorReply(env, errorf(CodeInvalidRequest,
				"seq %d is not after %d; seq counts up per connection from 1", env.Seq, c.lastSeq)), nil
		}
		c.lastSeq = env.Seq
	}

	run := commandFor(env.Type)
	if run == nil {
		return b.errorReply(env, errorf(CodeUnknownType, "unknown type %q; known: %s", env.Type, strings.Join(commandTypes, ", "))), nil
	}
	payload, post, err := run(b, ctx, c, env)
	if err != nil {
		return b.errorReply(env, err), nil
	}
	reply := b.reply(env, payload)
	if info, ok := payload.(SessionInfo); ok && env.Type == TypeSessionCreate {
		reply.Session = info.ID // session.create: the new session's id
	}
	if key != "" {
		win.put(key, reply)
	}
	return reply, post
}

// runFunc runs one command with b.mu held. It returns the reply payload
// and an optional step to run once the reply is queued.
type runFunc func(b *Broker, ctx context.Context, c *conn, env Envelope) (any, func(), error)

// commandFor returns the command of type typ, nil when there is none.
func commandFor(typ string) runFunc {
	switch typ {
	case TypeSessionCreate:
		return (*Broker).sessionCreate
	case TypeSessionList:
		return (*Broker).sessionList
	case TypeSessionClose:
		return (*Broker).sessionClose
	case TypeAgentAdd:
		return (*Broker).agentAdd
	case TypeAgentRemove:
		return (*Broker).agentRemove
	case TypeAgentList:
		return (*Broker).agentList
	case TypeAgentUpdate:
		return (*Broker).agentUpdate
	case TypeMessageCreated:
		return (*Broker).messageCreated
	case TypeActionSubmit:
		return (*Broker).actionSubmit
	case TypeActionResult:
		return (*Broker).actionResult
	case TypeTaskUpdated, TypeTaskDone:
		return (*Broker).taskEvent
	case TypeEventsHistory:
		return (*Broker).eventsHistory
	case TypeEventsStream:
		return (*Broker).eventsStream
	case TypeRelaySubmit:
		return (*Broker).relaySubmit
	case TypeRelayDone:
		return (*Broker).relayDone
	}
	return nil
}

var commandTypes = []string{
	TypeSessionCreate, TypeSessionList, TypeSessionClose,
	TypeAgentAdd, TypeAgentRemove, TypeAgentList, TypeAgentUpdate,
	TypeMessageCreated, TypeActionSubmit, TypeActionResult,
	TypeTaskUpdated, TypeTaskDone, TypeEventsHistory, TypeEventsStream,
	TypeRelaySubmit, TypeRelayDone,
}

// checkEnvelope enforces the fields every envelope carries.
func checkEnvelope(env Envelope) error {
	var missing []string
	if env.Type == "" {
		missing = append(missing, "type")
	}
	if env.ID == "" {
		missing = append(missing, "id")
	}
	if env.Src == "" {
		missing = append(missing, "src")
	}
	if len(missing) > 0 {
		return errorf(CodeInvalidRequest, "envelope is missing %s; every envelope carries v, type, id, ts and src",
			strings.Join(missing, ", "))
	}
	if env.V != Version {
		return errorf(CodeInvalidRequest, "unsupported envelope version v=%d; this bus speaks v=1", env.V)
	}
	if env.TS != "" {
		if _, err := time.Parse(time.RFC3339Nano, env.TS); err != nil {
			return errorf(CodeInvalidRequest, "ts %q is not an ISO-8601 time; send UTC like 2026-01-02T03:04:05.678Z", env.TS)
		}
	}
	if env.Seq < 0 {
		return errorf(CodeInvalidRequest, "seq %d is negative; seq counts up from 1", env.Seq)
	}
	if len(env.Payload) > 0 && env.Payload[0] != '{' {
		return errorf(CodeInvalidRequest, "payload must be a JSON object")
	}
	return nil
}

// idemScope returns the window and key that suppress repeats of env, or no
// key. Reads are not suppressed: repeating one should see fresh state.
func (b *Broker) idemScope(env Envelope) (*idemWindow, string) {
	switch env.Type {
	case TypeSessionList, TypeAgentList, TypeEventsHistory, TypeEventsStream:
		return nil, ""
	}
	key := env.IdempotencyKey
	if key == "" && (env.Type == TypeActionSubmit || env.Type == TypeRelaySubmit) {
		var p struct {
			GroupID any `json:"group_id"`
			RelayID any `json:"relay_id"`
		}
		_ = json.Unmarshal(env.Payload, &p)
		key, _ = p.GroupID.(string)
		if env.Type == TypeRelaySubmit {
			// One relay takes a submit per turn of its owner's model and
			// one more to end it, all under its relay_id: only a resend of
			// the very same envelope is a repeat.
			key = ""
			if id, _ := p.RelayID.(string); id != "" {
				key = id + "\x00" + env.ID
			}
		}
	}
	if key == "" {
		return nil, ""
	}
	if env.Type == TypeSessionCreate {
		return b.idem, env.Type + "\x00" + key
	}
	s, ok := b.sessions[env.Session]
	if !ok {
		return nil, ""
	}
	return s.idem, env.Type + "\x00" + key
}

func (b *Broker) reply(req Envelope, payload any) Envelope {
	r := Envelope{
		V:       Version,
		Type:    req.Type,
		ID:      b.stamps.id(),
		TS:      b.stamps.ts(b.opts.Now()),
		Src:     BusSrc,
		Dst:     req.Src,
		Session: req.Session,
		Corr:    req.ID,
		Status:  StatusOK,
	}
	switch p := payload.(type) {
	case nil:
	case jsonAppender:
		r.Payload = p.appendJSON(nil)
	default:
		raw, err := json.Marshal(payload)
		if err != nil {
			return b.errorReply(req, fmt.Errorf("marshal reply: %w", err))
		}
		r.Payload = raw
	}
	return r
}

func (b *Broker) errorReply(req Envelope, err error) Envelope {
	var e *Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, bus.ErrLimit):
		// The bus's own cap (bus.max_topics, bus.max_store_bytes): the
		// message names it and what to do.
		e = &Error{Code: CodeLimit, Message: err.Error()}
	default:
		e = &Error{Code: "internal", Message: err.Error()}
	}
	typ := req.Type
	if typ == "" {
		typ = TypeError
	}
	return Envelope{
		V:       Version,
		Type:    typ,
		ID:      b.stamps.id(),
		TS:      b.stamps.ts(b.opts.Now()),
		Src:     BusSrc,
		Dst:     req.Src,
		Session: req.Session,
		Corr:    req.ID,
		Status:  StatusError,
		Error:   e,
	}
}

// lookup returns the session env names, open unless allowClosed, brought
// up to date with the bus first.
func (b *Broker) lookup(ctx context.Context, env Envelope, allowClosed bool) (*session, error) {
	if env.Session == "" {
		return nil, errorf(CodeInvalidRequest, "%s needs a session; create one with session.create", env.Type)
	}
	s, ok := b.sessions[env.Session]
	if !ok {
		// Another server on the bus may have created it.
		if err := b.catchUpIndex(ctx); err != nil {
			return nil, err
		}
		s, ok = b.sessions[env.Session]
	}
	if !ok {
		return nil, errorf(CodeNotFound, "no session %q (have: %s)", env.Session, b.sessionNames())
	}
	if err := b.catchUp(ctx, s); err != nil {
		return nil, err
	}
	if !allowClosed && s.info.Status == "closed" {
		return nil, errorf(CodeConflict, "session %q is closed; create a new one with session.create", env.Session)
	}
	return s, nil
}

// inSession is the prologue of every session command: the session (open
// unless allowClosed) and the payload decoded as a T.
func inSession[T any](b *Broker, ctx context.Context, env Envelope, allowClosed bool) (*session, T, error) {
	var p T
	s, err := b.lookup(ctx, env, allowClosed)
	if err != nil {
		return nil, p, err
	}
	if err := decode(env, &p); err != nil {
		return nil, p, err
	}
	return s, p, nil
}

func (b *Broker) sessionNames() string {
	if len(b.order) == 0 {
		return "none"
	}
	const show = 5
	ids := b.order
	if len(ids) > show {
		ids = ids[len(ids)-show:]
	}
	out := strings.Join(ids, ", ")
	if len(b.order) > show {
		out = fmt.Sprintf("%s and %d more", out, len(b.order)-show)
	}
	return out
}

// emit records ev as the session's next event on the bus: its seq is its
// offset on the session's topic. The broker then applies it (state, then
// streams and agents) as every broker on the bus does. b.mu is held.
func (b *Broker) emit(ctx context.Context, s *session, ev Envelope) (Envelope, error) {
	now := b.opts.Now()
	ev.V = Version
	ev.Session = s.info.ID
	if ev.ID == "" {
		ev.ID = b.stamps.id()
	}
	ev.TS = b.stamps.ts(now)
	ev.Seq, ev.Corr, ev.Status, ev.Error, ev.IdempotencyKey = 0, "", "", nil, ""
	raw, err := marshalEnvelope(&ev)
	if err != nil {
		return ev, fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	// b.mu is held: a subscriber with a full queue must not hold every
	// request up, so its delivery is dead-lettered instead of waited for
	// (a socket connection's commands come with a ctx marked once).
	res, err := b.bus.Publish(bus.NoWait(ctx), bus.Message{ID: ev.ID, Topic: s.topic, Payload: raw, Headers: b.hdr, Time: now})
	if err != nil {
		return ev, fmt.Errorf("record %s on the bus: %w", ev.Type, err)
	}
	ev.Seq = int64(res.Offset)
	if ev.Seq == s.seq+1 {
		b.apply(s, ev)
		return ev, nil
	}
	// Another server wrote in between: read up to ours, in order.
	return ev, b.catchUp(ctx, s)
}

// deliverToAgents pushes ev to the connections bound to its dst, or to every
// agent but its src when it has no dst.
func (b *Broker) deliverToAgents(s *session, ev Envelope) {
	var seen []*conn // a connection may carry several agents; few per event
	push := func(a *agent) {
		for c := range a.sinks {
			if slices.Contains(seen, c) {
				continue
			}
			seen = append(seen, c)
			if !c.out.push(ev) {
				delete(a.sinks, c)
			}
		}
	}
	if ev.Dst != "" {
		if a := s.agent(ev.Dst); a != nil {
			push(a)
		}
	} else {
		for _, a := range s.agents {
			if a.info.ID != ev.Src {
				push(a)
			}
		}
	}
}

func (st *stream) deliver(ev Envelope) bool {
	if st.agent != "" && !addressedTo(ev, st.agent) {
		return true
	}
	if st.corr == "" {
		return st.out.push(ev)
	}
	raw, _ := marshalEnvelope(&ev)
	return st.out.push(Envelope{
		V: Version, Type: TypeEventsRecord, ID: NewID(), TS: ev.TS, Src: BusSrc,
		Session: ev.Session, Corr: st.corr, Payload: raw,
	})
}

func (s *session) agent(id string) *agent {
	for _, a := range s.agents {
		if a.info.ID == id {
			return a
		}
	}
	return nil
}

// resolve finds an agent by id, else by its display name.
func (s *session) resolve(dst string) (*agent, *Error) {
	if a := s.agent(dst); a != nil {
		return a, nil
	}
	var found []*agent
	for _, a := range s.agents {
		if a.info.Name != "" && a.info.Name == dst {
			found = append(found, a)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, errorf(CodeNotFound, "no agent %q in session %q (agents: %s); add it with agent.add",
			dst, s.info.ID, s.agentIDs())
	}
	return nil, errorf(CodeConflict, "name %q is shared by several agents in session %q; address one by id", dst, s.info.ID)
}

func (s *session) agentIDs() string {
	if len(s.agents) == 0 {
		return "none"
	}
	ids := make([]string, len(s.agents))
	for i, a := range s.agents {
		ids[i] = a.info.ID
	}
	return strings.Join(ids, ", ")
}

// nameTaken reports another agent that already answers to name.
func (s *session) nameTaken(name, self string) string {
	for _, a := range s.agents {
		if a.info.ID != self && (a.info.ID == name || a.info.Name == name) {
			return a.info.ID
		}
	}
	return ""
}

// detach forgets connection c: its agent bindings and streams.
func (b *Broker) detach(c *conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.sessions {
		for _, a := range s.agents {
			delete(a.sinks, c)
		}
		for st := range s.streams {
			if st.out == c.out {
				delete(s.streams, st)
			}
		}
	}
}

// subscribe replays the events of session id after seq (none when after is
// negative) and then follows it. It reports a closed session, which has
// nothing more to follow.
func (b *Broker) subscribe(ctx context.Context, id string, after int64, st *stream) (closed bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.lookup(ctx, Envelope{Type: "events", Session: id}, true)
	if err != nil {
		return false, err
	}
	if after >= 0 {
		overflow := false
		err := b.replay(ctx, s, after, func(ev Envelope) bool {
			overflow = !st.deliver(ev)
			return !overflow
		})
		if err != nil {
			return false, err
		}
		if overflow {
			return false, errorf(CodeSlowConsumer, "replay of session %q overflowed the stream queue; resume with a later Last-Event-ID", id)
		}
	}
	if s.info.Status == "closed" {
		return true, nil
	}
	s.streams[st] = struct{}{}
	return false, nil
}

func (b *Broker) unsubscribe(id string, st *stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.sessions[id]; ok {
		delete(s.streams, st)
	}
}

// idemWindow remembers the last n keys and their replies.
type idemWindow struct {
	n    int
	seen map[string]Envelope
	fifo []string
}

func newIdemWindow(n int) *idemWindow {
	return &idemWindow{n: n, seen: make(map[string]Envelope)}
}

func (w *idemWindow) get(key string) (Envelope, bool) {
	e, ok := w.seen[key]
	return e, ok
}

func (w *idemWindow) put(key string, reply Envelope) {
	if _, ok := w.seen[key]; ok {
		return
	}
	w.seen[key] = reply
	w.fifo = append(w.fifo, key)
	if len(w.fifo) > w.n {
		delete(w.seen, w.fifo[0])
		w.fifo = w.fifo[1:]
	}
}
