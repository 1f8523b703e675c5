package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxCachedRoutes bounds the per-topic route cache of one subscription
// snapshot; topics past it are matched on every publish.
const maxCachedRoutes = 4096

// Memory is the embedded backend: everything lives in the process.
type Memory struct {
	opts       Options
	clock      Clock
	retained   []pattern
	appendOnly []pattern
	idPrefix   string
	ids        atomic.Uint64

	// mu guards subs, nextSub and replacing snap.
	mu      sync.Mutex
	subs    []*memSub // oldest first
	nextSub uint64
	snap    atomic.Pointer[snapshot]

	closed atomic.Bool
	ctx    context.Context // cancelled by Close; handlers of Publish get it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// deadlines times the calls of cooperative subscriptions.
	deadlines *deadlines

	storeMu sync.Mutex
	last    map[string]Message
	logs    map[string]*memLog
	// storeBytes is what last and logs hold, by storedSize.
	storeBytes int64

	idemMu    sync.Mutex
	idem      map[string]time.Time
	idemOrder []idemEntry

	dlqMu  sync.Mutex
	dlq    []DeadLetter
	dlqSub map[string]*memSub
}

var _ Bus = (*Memory)(nil)

// snapshot is an immutable view of the subscription list with a cache of
// the routes computed from it; a subscription change installs a new one.
type snapshot struct {
	subs []*memSub
	// hot is the last route looked up: publishers in a loop on one topic
	// skip the map.
	hot atomic.Pointer[route]
	// routes caches the routes of up to maxCachedRoutes topics.
	routes  sync.Map // string -> *route
	nroutes atomic.Int32
}

func newSnapshot(subs []*memSub) *snapshot { return &snapshot{subs: subs} }

// route is what the bus does with one topic.
type route struct {
	topic      string
	subs       []*memSub // newest first, superseded ones left out
	retained   bool
	appendOnly bool
}

type idemEntry struct {
	key string
	at  time.Time
}

type delivery struct {
	m    Message
	stop bool // tells the worker its subscription is gone
}

// NewMemory returns an in-process bus. It fails only on invalid options.
func NewMemory(opts Options) (*Memory, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	b := &Memory{
		opts:   opts,
		clock:  opts.Clock,
		last:   make(map[string]Message),
		logs:   make(map[string]*memLog),
		idem:   make(map[string]time.Time),
		dlqSub: make(map[string]*memSub),
	}
	for _, p := range opts.Retained {
		cp, _ := compilePattern(p) // validated above
		b.retained = append(b.retained, cp)
	}
	for _, p := range opts.AppendOnly {
		cp, _ := compilePattern(p)
		b.appendOnly = append(b.appendOnly, cp)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:]) // never fails; IDs stay unique within the bus anyway
	b.idPrefix = hex.EncodeToString(rnd[:]) + "-"
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.deadlines = newDeadlines(b.clock, b.ctx.Done())
	b.snap.Store(newSnapshot(nil))
	return b, nil
}

// Options returns the options in effect, defaults filled in.
func (b *Memory) Options() Options { return b.opts }

// stamp fills an empty ID and a zero Time.
func (b *Memory) stamp(m *Message) {
	if m.ID == "" {
		m.ID = b.newID()
	}
	if m.Time.IsZero() {
		m.Time = b.clock.Now()
	}
}

func (b *Memory) newID() string {
	var buf [32]byte
	n := copy(buf[:], b.idPrefix)
	return string(strconv.AppendUint(buf[:n], b.ids.Add(1), 36))
}

// route returns the route for topic, from the cache when it can.
func (b *Memory) route(topic string) (*route, error) {
	snap := b.snap.Load()
	if r := snap.hot.Load(); r != nil && r.topic == topic {
		return r, nil
	}
	if v, ok := snap.routes.Load(topic); ok {
		r := v.(*route)
		snap.hot.Store(r)
		return r, nil
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, err
	}
	r := &route{topic: topic, retained: matchAny(b.retained, topic), appendOnly: matchAny(b.appendOnly, topic)}
	var seen map[string]struct{}
	everyone := IsBroadcast(topic)
	for i := len(snap.subs) - 1; i >= 0; i-- {
		s := snap.subs[i]
		if !s.pat.match(topic) {
			continue
		}
		if everyone || s.observer {
			r.subs = append(r.subs, s) // no supersession either way
			continue
		}
		if _, dup := seen[s.pat.raw]; dup {
			continue // superseded by a newer identical pattern
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		seen[s.pat.raw] = struct{}{}
		r.subs = append(r.subs, s)
	}
	if snap.nroutes.Add(1) <= maxCachedRoutes {
		snap.routes.Store(topic, r)
	}
	return r, nil
}

func matchAny(ps []pattern, topic string) bool {
	for _, p := range ps {
		if p.match(topic) {
			return true
		}
	}
	return false
}

// prepare validates m, stamps its ID and time when asked to or when the
// message is kept, drops duplicates and stores it on retained and
// append-only topics.
func (b *Memory) prepare(m *Message, stamp bool, res *Result) (*route, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	r, err := b.route(m.Topic)
	if err != nil {
		return nil, err
	}
	if stamp || r.retained || r.appendOnly {
		b.stamp(m)
	}
	res.MessageID = m.ID
	if m.IdempotencyKey != "" && b.duplicate(m.Topic, m.IdempotencyKey) {
		res.Duplicate = true
		return nil, nil
	}
	if r.retained || r.appendOnly {
		if res.Offset, err = b.store(r, *m); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Publish implements Bus.
func (b *Memory) Publish(ctx context.Context, m Message) (res Result, err error) {
	r, err := b.prepare(&m, false, &res)
	if r == nil {
		return res, err
	}
	for _, s := range r.subs {
		if s.accept != nil && !s.accept(m) {
			continue
		}
		switch s.enqueue(ctx, &m) {
		case enqueued:
			res.Delivered++
		case deadLettered:
			res.DeadLettered = true
		}
	}
	return res, nil
}

// Request implements Bus.
func (b *Memory) Request(ctx context.Context, m Message) (res Result, err error) {
	r, err := b.prepare(&m, true, &res)
	if r == nil {
		return res, err
	}
	return b.walk(ctx, m, r.subs, res)
}

func (b *Memory) walk(ctx context.Context, m Message, subs []*memSub, res Result) (Result, error) {
	for _, s := range subs {
		if s.removed.Load() || (s.accept != nil && !s.accept(m)) {
			continue
		}
		ack, dead, err := s.request(ctx, m)
		res.Delivered++
		res.Acks = append(res.Acks, ack)
		res.DeadLettered = res.DeadLettered || dead
		if err != nil {
			return res, fmt.Errorf("request on %s: %w", m.Topic, err)
		}
		if s.policy.Stops(ack) {
			res.Stopped = true
			break
		}
	}
	return res, nil
}

// Subscribe implements Bus.
func (b *Memory) Subscribe(ctx context.Context, pat string, h Handler, opts SubscribeOptions) (Subscription, error) {
	cp, err := compilePattern(pat)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("subscribe to %q: nil handler", pat)
	}
	policy, err := ParsePolicy(string(opts.Policy))
	if err != nil {
		return nil, fmt.Errorf("subscribe to %q: %w", pat, err)
	}
	if policy == "" {
		policy = b.opts.DefaultPolicy
	}
	size := opts.QueueSize
	if size <= 0 {
		size = b.opts.QueueSize
	}
	if size > MaxQueueSize {
		return nil, fmt.Errorf("subscribe to %q: queue size %d is above the maximum of %d", pat, size, MaxQueueSize)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = b.opts.RequestTimeout
	}
	s := &memSub{
		bus:          b,
		pat:          cp,
		h:            h,
		name:         opts.Name,
		policy:       policy,
		timeout:      timeout,
		q:            newQueue(size),
		asyncTimeout: opts.Timeout,
		cooperative:  opts.Cooperative,
		observer:     opts.Observer,
		accept:       opts.Accept,
		removedCh:    make(chan struct{}),
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	b.nextSub++
	if s.name == "" {
		s.name = "sub-" + strconv.FormatUint(b.nextSub, 10)
	}
	b.subs = append(b.subs, s)
	b.publishSnapshot()
	b.wg.Add(1)
	go s.run()
	return s, nil
}

// publishSnapshot installs a snapshot of b.subs; b.mu must be held.
func (b *Memory) publishSnapshot() {
	subs := make([]*memSub, len(b.subs))
	copy(subs, b.subs)
	b.snap.Store(newSnapshot(subs))
}

func (b *Memory) unsubscribe(s *memSub) error {
	b.mu.Lock()
	i := -1
	for j, x := range b.subs {
		if x == s {
			i = j
			break
		}
	}
	if i < 0 {
		b.mu.Unlock()
		return fmt.Errorf("unsubscribe %s from %q: subscription already removed: %w", s.name, s.pat.raw, ErrNotFound)
	}
	b.subs = append(b.subs[:i:i], b.subs[i+1:]...)
	b.publishSnapshot()
	b.mu.Unlock()
	s.stop()
	return nil
}

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

// memLog is an append-only topic's log, kept in chunks of at most logChunk
// messages: chunks[0][head] has offset first, and the messages follow in
// order. Appends fill the last chunk; drops move head and release whole
// chunks. A message's slot is never written again once it is in a chunk, so
// a Replay reads the chunks it took under the lock without holding it, and
// no append ever copies the log or allocates more than one chunk.
type memLog struct {
	first  uint64
	chunks [][]Message
	head   int
	n      int // messages kept
	// bytes is what the kept messages hold, by storedSize.
	bytes int64
}

// A log's first chunk holds firstChunk messages, each next one twice as
// many as the one before, up to logChunk.
const (
	firstChunk = 4
	logChunk   = 1024
)

// add appends m, drops the oldest message past limit and returns m's offset
// and the bytes the log grew by (negative when it shrank).
func (l *memLog) add(m Message, limit int) (uint64, int64) {
	before := l.bytes
	last := len(l.chunks) - 1
	if last < 0 || len(l.chunks[last]) == cap(l.chunks[last]) {
		// Chunks start small and double up to logChunk, so that a log of
		// a few messages costs a few slots: a bus may keep many.
		size := firstChunk
		if last >= 0 {
			size = min(2*cap(l.chunks[last]), logChunk)
		}
		l.chunks = append(l.chunks, make([]Message, 0, size))
		last++
	}
	l.chunks[last] = append(l.chunks[last], m)
	l.n++
	l.bytes += storedSize(m)
	if l.n > limit {
		l.drop(l.n - limit)
	}
	return l.first + uint64(l.n) - 1, l.bytes - before
}

// front is the oldest message kept; the log must not be empty.
func (l *memLog) front() Message { return l.chunks[0][l.head] }

// drop forgets the n oldest messages. Their slots are never cleared, since
// a Replay may still be reading them; a chunk goes once all of it is
// dropped, or once the kept messages are fewer than the dropped slots
// (they move to a new chunk), and its memory with its last reader.
func (l *memLog) drop(n int) {
	for n > 0 && l.n > 0 {
		c := l.chunks[0]
		k := min(n, len(c)-l.head)
		for _, m := range c[l.head : l.head+k] {
			l.bytes -= storedSize(m)
		}
		l.head += k
		l.n -= k
		l.first += uint64(k)
		n -= k
		if l.head == len(c) && (len(c) == cap(c) || len(l.chunks) > 1) {
			l.chunks[0] = nil
			l.chunks = l.chunks[1:]
			l.head = 0
		}
	}
	if l.head > 0 && l.head >= l.n {
		// The dropped slots outnumber the kept messages, which then fit in
		// one chunk: they move to a new one, and the old chunks go with
		// their last reader. This copies at most a chunk.
		var kept []Message
		if l.n > 0 {
			kept = make([]Message, 0, max(l.n, firstChunk))
			skip := l.head
			for _, c := range l.chunks {
				kept = append(kept, c[skip:]...)
				skip = 0
			}
		}
		l.chunks, l.head = nil, 0
		if kept != nil {
			l.chunks = [][]Message{kept}
		}
	}
}

// logView is what a Replay reads: n kept messages as they were when it
// was taken, from chunks[0][head], which has offset first.
type logView struct {
	first  uint64
	chunks [][]Message
	head   int
	n      int
}

// view returns the kept messages from offset from on. Only the headers of
// the chunks that hold them are copied (a later append to the last chunk
// writes past the length this copy holds), and nothing when from is past
// the end: a reader catching up on every command asks that most often.
func (l *memLog) view(from uint64) logView {
	from = max(from, l.first)
	if from-l.first >= uint64(l.n) {
		return logView{first: from}
	}
	skip := l.head + int(from-l.first)
	i := 0
	for skip >= len(l.chunks[i]) {
		skip -= len(l.chunks[i])
		i++
	}
	return logView{first: from, chunks: append([][]Message(nil), l.chunks[i:]...), head: skip, n: l.n - int(from-l.first)}
}

// each calls fn on the view's messages, in order, until fn returns false.
func (v logView) each(fn func(uint64, Message) bool) {
	off, skip, left := v.first, v.head, v.n
	for _, c := range v.chunks {
		for _, m := range c[skip:min(len(c), skip+left)] {
			if !fn(off, m) {
				return
			}
			off++
			left--
		}
		skip = 0
	}
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
		return 0, nil, fmt.Errorf("publish on %q: the bus keeps its limit of %d retained and append-only topics (bus.max_topics): forget old ones or raise the limit", m.Topic, b.opts.MaxTopics)
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
		return 0, dropped, fmt.Errorf("publish on %q: retained messages and append-only logs hold %d bytes, the bus's limit (bus.max_store_bytes): forget old topics or raise the limit", m.Topic, b.storeBytes)
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

// duplicate records the key and reports whether it was seen in the window.
func (b *Memory) duplicate(topic, key string) bool {
	now := b.clock.Now()
	k := topic + "\x00" + key
	b.idemMu.Lock()
	defer b.idemMu.Unlock()
	n := 0
	for n < len(b.idemOrder) && now.Sub(b.idemOrder[n].at) >= b.opts.IdempotencyWindow {
		e := b.idemOrder[n]
		if b.idem[e.key].Equal(e.at) {
			delete(b.idem, e.key)
		}
		n++
	}
	b.idemOrder = b.idemOrder[n:]
	if at, ok := b.idem[k]; ok && now.Sub(at) < b.opts.IdempotencyWindow {
		return true
	}
	b.idem[k] = now
	b.idemOrder = append(b.idemOrder, idemEntry{key: k, at: now})
	return false
}

func (b *Memory) deadLetter(s *memSub, m Message, reason string, attempts int, last Ack) {
	if m.Topic == DeadLetterTopic {
		// An announcement nobody took is dropped: the dead letter it
		// announces is stored already, and keeping it again would store
		// each failure twice.
		return
	}
	b.stamp(&m)
	dl := DeadLetter{
		ID:         "dl-" + b.newID(),
		Message:    m,
		Subscriber: s.name,
		Pattern:    s.pat.raw,
		Reason:     reason,
		Attempts:   attempts,
		LastAck:    last,
		Time:       b.clock.Now(),
	}
	b.keepDeadLetter(dl, s)
}

// keepDeadLetter stores dl, for replay to s when s is not nil, drops the
// oldest past MaxDeadLetters, and announces it.
func (b *Memory) keepDeadLetter(dl DeadLetter, s *memSub) {
	b.dlqMu.Lock()
	b.dlq = append(b.dlq, dl)
	if s != nil {
		b.dlqSub[dl.ID] = s
	}
	if n := len(b.dlq) - b.opts.MaxDeadLetters; n > 0 {
		for _, old := range b.dlq[:n] {
			delete(b.dlqSub, old.ID)
		}
		b.dlq = b.dlq[n:]
	}
	b.dlqMu.Unlock()
	b.announce(dl)
}

// announce publishes dl on DeadLetterTopic without ever blocking: the dead
// letter is stored already, the announcement is a courtesy.
func (b *Memory) announce(dl DeadLetter) {
	if b.closed.Load() {
		return
	}
	payload, err := json.Marshal(dl)
	if err != nil {
		return
	}
	r, err := b.route(DeadLetterTopic)
	if err != nil {
		return
	}
	m := Message{ID: b.newID(), Topic: DeadLetterTopic, Payload: payload, Time: b.clock.Now()}
	for _, s := range r.subs {
		if s.removed.Load() {
			continue
		}
		if s.q.push(delivery{m: m}, false) {
			s.rescueIfExited()
		}
	}
}

// DeadLetters implements Bus.
func (b *Memory) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	b.dlqMu.Lock()
	defer b.dlqMu.Unlock()
	out := make([]DeadLetter, len(b.dlq))
	copy(out, b.dlq)
	return out, nil
}

// ReplayDeadLetter implements Bus.
func (b *Memory) ReplayDeadLetter(ctx context.Context, id string) (Result, error) {
	if b.closed.Load() {
		return Result{}, ErrClosed
	}
	b.dlqMu.Lock()
	i := -1
	for j := range b.dlq {
		if b.dlq[j].ID == id {
			i = j
			break
		}
	}
	if i < 0 {
		b.dlqMu.Unlock()
		return Result{}, fmt.Errorf("dead letter %q: %w (list them with weave bus dlq)", id, ErrNotFound)
	}
	dl := b.dlq[i]
	if dl.Subscriber == "" {
		// A notice of messages dropped to fit the store: their payloads
		// are gone, and no delivery failed.
		b.dlqMu.Unlock()
		return Result{}, fmt.Errorf("dead letter %q notes messages dropped to fit bus.max_store_bytes; there is nothing to replay", id)
	}
	s := b.dlqSub[id]
	b.dlq = append(b.dlq[:i:i], b.dlq[i+1:]...)
	delete(b.dlqSub, id)
	b.dlqMu.Unlock()

	m := dl.Message
	m.Attempt = 0
	res := Result{MessageID: m.ID}
	if s != nil && !s.removed.Load() {
		return b.walk(ctx, m, []*memSub{s}, res)
	}
	r, err := b.route(m.Topic)
	if err != nil {
		return res, err
	}
	return b.walk(ctx, m, r.subs, res)
}

// Close implements Bus.
func (b *Memory) Close() error {
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		return nil
	}
	b.closed.Store(true)
	subs := b.subs
	b.subs = nil
	b.publishSnapshot()
	b.mu.Unlock()
	b.cancel()
	for _, s := range subs {
		s.stop()
	}
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-b.clock.After(b.opts.RequestTimeout):
		return fmt.Errorf("close bus: some handlers did not return within %s of their context being cancelled", b.opts.RequestTimeout)
	}
}

type memSub struct {
	bus     *Memory
	pat     pattern
	h       Handler
	name    string
	policy  Policy
	timeout time.Duration
	// asyncTimeout is SubscribeOptions.Timeout as given: the deadline of
	// the context of queued deliveries, none when zero.
	asyncTimeout time.Duration
	cooperative  bool               // SubscribeOptions.Cooperative
	observer     bool               // SubscribeOptions.Observer
	accept       func(Message) bool // SubscribeOptions.Accept
	q            *queue

	removed atomic.Bool
	// exited is set by the worker once it has drained its queue after
	// removal; a publisher that sent after that delivers what it left.
	exited    atomic.Bool
	removedCh chan struct{}
	stopOnce  sync.Once

	// Owned by the worker goroutine.
	stopping bool
	panicMsg string
}

func (s *memSub) Pattern() string    { return s.pat.raw }
func (s *memSub) Name() string       { return s.name }
func (s *memSub) Unsubscribe() error { return s.bus.unsubscribe(s) }

func (s *memSub) stop() {
	s.stopOnce.Do(func() {
		s.removed.Store(true)
		close(s.removedCh)
		s.q.push(delivery{stop: true}, true)
	})
}

type enqueueOutcome uint8

const (
	skipped enqueueOutcome = iota
	enqueued
	deadLettered
)

func (s *memSub) enqueue(ctx context.Context, m *Message) enqueueOutcome {
	if s.removed.Load() {
		return skipped
	}
	if s.q.push(delivery{m: *m}, false) {
		s.rescueIfExited()
		return enqueued
	}
	return s.enqueueSlow(ctx, m)
}

// rescueIfExited delivers, on the publisher's goroutine, messages sent to a
// queue whose worker has already finished. It happens only when a publish
// races with Unsubscribe or Close.
func (s *memSub) rescueIfExited() {
	if !s.exited.Load() {
		return
	}
	for {
		d, ok := s.q.pop()
		if !ok {
			return
		}
		if !d.stop {
			s.rescue(&d.m)
		}
	}
}

func (s *memSub) enqueueSlow(ctx context.Context, m *Message) enqueueOutcome {
	d := delivery{m: *m}
	b := s.bus
	if noWait(ctx) {
		b.deadLetter(s, *m, fmt.Sprintf("queue full: subscriber %s has %d messages waiting and the publisher does not wait; make its handler faster or raise its queue size", s.name, s.q.limit), 0, Ack{})
		return deadLettered
	}
	timeout := b.clock.After(b.opts.EnqueueTimeout)
	for {
		select {
		case <-s.q.room:
			if s.q.push(d, false) {
				if s.q.hasRoom() {
					signal(s.q.room) // another publisher may be waiting
				}
				s.rescueIfExited()
				return enqueued
			}
			continue
		case <-timeout:
			b.deadLetter(s, *m, fmt.Sprintf("queue full: subscriber %s took no message for %s; make its handler faster or raise its queue size", s.name, b.opts.EnqueueTimeout), 0, Ack{})
		case <-b.ctx.Done():
			b.deadLetter(s, *m, "bus closed before the message was queued", 0, Ack{})
		case <-ctx.Done():
			b.deadLetter(s, *m, fmt.Sprintf("publisher gave up waiting for room in the queue: %v", ctx.Err()), 0, Ack{})
		}
		return deadLettered
	}
}

// run is the subscription's worker: it delivers queued messages in order.
// The delivery in hand lives here so that a handler panic, recovered in
// serve, can be handled as a failed attempt of that delivery.
func (s *memSub) run() {
	defer s.bus.wg.Done()
	var cur delivery
	for !s.serve(&cur) {
	}
}

// serve delivers until the subscription is gone and drained (true). A
// handler panic ends it early (false) with panicMsg set; the next call
// treats the panic as a failed attempt and goes on. The recover sits here,
// not around each handler call, to keep it off the per-message path.
func (s *memSub) serve(cur *delivery) (done bool) {
	defer func() {
		if r := recover(); r != nil {
			s.panicMsg = fmt.Sprintf("handler of %s panicked: %v", s.name, r)
			done = false
		}
	}()
	if s.panicMsg != "" {
		ack := Ack{Subscriber: s.name, Error: s.panicMsg}
		s.panicMsg = ""
		s.retry(&cur.m, ack)
	}
	if s.stopping {
		s.drain(cur)
		return true
	}
	for {
		d, ok := s.q.pop()
		if !ok {
			<-s.q.ready
			continue
		}
		*cur = d
		if cur.stop {
			s.stopping = true
			s.drain(cur)
			return true
		}
		s.handle(&cur.m)
	}
}

// drain delivers what is left once the subscription is gone. A publisher
// that passed its removed check before removal may still send; once exited
// is set, such a publisher delivers what it sent itself (rescueIfExited),
// and the second pass catches sends that came in between.
func (s *memSub) drain(cur *delivery) {
	s.drainOnce(cur)
	s.exited.Store(true)
	s.drainOnce(cur)
}

func (s *memSub) drainOnce(cur *delivery) {
	for {
		d, ok := s.q.pop()
		if !ok {
			return
		}
		*cur = d
		if !cur.stop {
			s.handle(&cur.m)
		}
	}
}

// rescue delivers, on a publisher's goroutine, a message left in the queue
// of a finished worker; a panic there only fails that delivery.
func (s *memSub) rescue(m *Message) {
	defer func() {
		if r := recover(); r != nil {
			s.bus.deadLetter(s, *m, fmt.Sprintf("handler of %s panicked: %v", s.name, r), m.Attempt, Ack{})
		}
	}()
	s.handle(m)
}

// handle delivers a dequeued message: attempt 1 inline, retries if needed.
func (s *memSub) handle(m *Message) {
	b := s.bus
	if b.closed.Load() {
		b.deadLetter(s, *m, "bus closed before delivery", 0, Ack{})
		return
	}
	m.Attempt = 1
	a, err := s.deliver(m)
	if err == nil && a.Error == "" && !a.ShouldRetry {
		return
	}
	s.retry(m, s.settle(a, err))
}

// deliver calls the handler for a queued message. Only subscriptions with
// their own Timeout get a deadline: it costs a timer per message.
func (s *memSub) deliver(m *Message) (Ack, error) {
	if s.asyncTimeout <= 0 {
		return s.h(s.bus.ctx, *m)
	}
	ctx, cancel := context.WithTimeout(s.bus.ctx, s.asyncTimeout)
	defer cancel()
	return s.h(ctx, *m)
}

// retry goes on with a Publish delivery whose attempt m.Attempt failed
// with ack.
func (s *memSub) retry(m *Message, ack Ack) {
	b := s.bus
	for {
		if m.Attempt >= b.opts.MaxAttempts {
			b.deadLetter(s, *m, exhausted(s.name, m.Attempt, ack), m.Attempt, ack)
			return
		}
		if d := retryDelay(ack, b.opts.RetryDelay, b.opts.MaxRetryDelay); d > 0 {
			select {
			case <-b.clock.After(d):
			case <-b.ctx.Done():
				b.deadLetter(s, *m, "bus closed while waiting to retry", m.Attempt, ack)
				return
			}
		}
		m.Attempt++
		a, err := s.deliver(m)
		ack = s.settle(a, err)
		if ack.Error == "" && !ack.ShouldRetry {
			return
		}
	}
}

func exhausted(name string, attempts int, ack Ack) string {
	why := ack.Error
	if why == "" {
		why = ack.Message
	}
	if why == "" {
		why = "asked for a retry"
	}
	return fmt.Sprintf("gave up after %d attempts to %s: %s", attempts, name, why)
}

// settle turns a handler's answer into the ack the bus acts on.
func (s *memSub) settle(a Ack, err error) Ack {
	if err != nil {
		a.Processed = false
		a.Error = err.Error()
	}
	if a.Subscriber == "" {
		a.Subscriber = s.name
	}
	return a
}

// call runs the handler for a Request, turning errors and panics into acks.
func (s *memSub) call(ctx context.Context, m *Message) (ack Ack) {
	defer func() {
		if r := recover(); r != nil {
			ack = Ack{Subscriber: s.name, Error: fmt.Sprintf("handler of %s panicked: %v", s.name, r)}
		}
	}()
	a, err := s.h(ctx, *m)
	return s.settle(a, err)
}

// request delivers m for a Request: with the subscription's timeout,
// retrying inline when asked. It reports whether m was dead-lettered; the
// error is the caller's context ending.
func (s *memSub) request(ctx context.Context, m Message) (Ack, bool, error) {
	b := s.bus
	for attempt := 1; ; attempt++ {
		m.Attempt = attempt
		ack, err := s.callTimeout(ctx, &m)
		if err != nil {
			return ack, false, err
		}
		if ack.Error != "" {
			b.deadLetter(s, m, fmt.Sprintf("delivery to %s failed: %s", s.name, ack.Error), attempt, ack)
			return ack, true, nil
		}
		if !ack.ShouldRetry {
			return ack, false, nil
		}
		if attempt >= b.opts.MaxAttempts {
			b.deadLetter(s, m, exhausted(s.name, attempt, ack), attempt, ack)
			return ack, true, nil
		}
		if d := retryDelay(ack, 0, b.opts.MaxRetryDelay); d > 0 {
			select {
			case <-b.clock.After(d):
			case <-ctx.Done():
				return ack, false, ctx.Err()
			case <-b.ctx.Done():
				return ack, false, ErrClosed
			}
		}
	}
}

func (s *memSub) callTimeout(ctx context.Context, m *Message) (Ack, error) {
	b := s.bus
	if s.cooperative {
		return s.callCooperative(ctx, m)
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan Ack, 1)
	mc := *m // the goroutine may outlive this call
	go func() { done <- s.call(hctx, &mc) }()
	select {
	case a := <-done:
		return a, nil
	case <-b.clock.After(s.timeout):
		return Ack{Subscriber: s.name, Error: fmt.Sprintf("subscriber %s did not answer within %s", s.name, s.timeout)}, nil
	case <-ctx.Done():
		return Ack{Subscriber: s.name, Error: "request cancelled before " + s.name + " answered"}, ctx.Err()
	case <-b.ctx.Done():
		return Ack{Subscriber: s.name, Error: "bus closed before " + s.name + " answered"}, ErrClosed
	}
}

// callCooperative calls a cooperative handler on the requesting goroutine.
// Its context ends at the timeout, when the request is cancelled or when the
// bus closes; a handler that then gives up with an error is reported with
// the same ack as on the hand-off path.
func (s *memSub) callCooperative(ctx context.Context, m *Message) (Ack, error) {
	hctx, done := s.bus.deadlines.watch(ctx, s.timeout)
	a := s.call(hctx, m)
	cause := context.Cause(hctx)
	done()
	switch {
	case ctx.Err() != nil:
		return Ack{Subscriber: s.name, Error: "request cancelled before " + s.name + " answered"}, ctx.Err()
	case a.Error == "" || cause == nil:
		return a, nil
	case cause == ErrClosed:
		return Ack{Subscriber: s.name, Error: "bus closed before " + s.name + " answered"}, ErrClosed
	}
	return Ack{Subscriber: s.name, Error: fmt.Sprintf("subscriber %s did not answer within %s", s.name, s.timeout)}, nil
}
