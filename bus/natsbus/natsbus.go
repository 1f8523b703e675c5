package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/internal/proc"
)

// originHeader names the bus process a forwarded publish came from, so the
// process does not deliver its own messages twice.
const originHeader = "Weave-Origin"

// dlqCapture is the pattern of the subscription that copies this process's
// dead letters to JetStream. It matches only bus.DeadLetterTopic, but it is
// not the same string, so a user's subscription to that topic never
// supersedes it.
const dlqCapture = "system:dead-lette[r]"

// storeAttempt bounds one try at storing a message in JetStream; the store
// is retried with the same message id until the caller's context or
// Options.RequestTimeout ends, so a NATS server restart loses nothing.
const storeAttempt = 2 * time.Second

// Bus is a bus.Bus on NATS. Create it with New.
type Bus struct {
	opts     bus.Options
	inner    *bus.Memory
	nc       *nats.Conn
	js       jetstream.JetStream
	instance string
	retained []string
	appendOn []string

	retStream jetstream.Stream
	logs      sync.Map // stream name -> jetstream.Stream
	subsKV    jetstream.KeyValue
	dlqKV     jetstream.KeyValue

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	closed atomic.Bool

	natsSubs []*nats.Subscription
	watcher  jetstream.KeyWatcher
	watchWG  sync.WaitGroup

	regMu    sync.Mutex
	registry map[string]regEntry // KV key -> entry, all processes
	nextSub  atomic.Uint64
	mine     sync.Map // KV key -> pattern of this process's subscriptions

	dlqMu     sync.Mutex
	persisted map[string]bool          // dead letter ids written to dlqKV
	writing   map[string]chan struct{} // dead letter ids being written, closed when done
	replayed  map[string]bool          // dead letter ids replayed; never written again
}

type regEntry struct {
	instance string
	pattern  string
	rev      uint64
}

var _ bus.Bus = (*Bus)(nil)

// New connects to the NATS server at url (with JetStream enabled), creates
// the streams and buckets it needs when they are missing, and returns a bus
// that behaves like bus.NewMemory for everything in this process and shares
// messages, retained and append-only topics, dead letters and the
// subscription registry with every other bus on the same server. ctx bounds
// the setup only.
//
// The URL may carry credentials (nats://user:pass@host); errors show it
// redacted (Redact). Options (WithAuth) give credentials and TLS without
// putting them in the URL.
func New(ctx context.Context, url string, opts bus.Options, with ...Option) (*Bus, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var cc connectConfig
	for _, o := range with {
		o(&cc)
	}
	connOpts, err := cc.auth.options()
	if err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	local := opts
	local.Retained, local.AppendOnly = nil, nil // stored in JetStream instead
	inner, err := bus.NewMemory(local)
	if err != nil {
		return nil, err
	}
	b := &Bus{
		opts:      opts,
		inner:     inner,
		instance:  nuid.Next(),
		retained:  slices.Clone(opts.Retained),
		appendOn:  slices.Clone(opts.AppendOnly),
		registry:  make(map[string]regEntry),
		persisted: make(map[string]bool),
		writing:   make(map[string]chan struct{}),
		replayed:  make(map[string]bool),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if err := b.connect(ctx, url, connOpts); err != nil {
		b.cancel()
		_ = inner.Close()
		if b.nc != nil {
			b.nc.Close()
		}
		return nil, err
	}
	return b, nil
}

// Option changes how New connects.
type Option func(*connectConfig)

type connectConfig struct {
	auth Auth
}

// WithAuth makes New authenticate and secure its connection as a says.
func WithAuth(a Auth) Option { return func(c *connectConfig) { c.auth = a } }

// Redact returns a NATS URL (or comma-separated list) as it may be shown:
// any user info it carries replaced by "***".
func Redact(url string) string { return proc.RedactURL(url) }

func (b *Bus) connect(ctx context.Context, rawURL string, connOpts []nats.Option) error {
	url := Redact(rawURL)
	nc, err := nats.Connect(rawURL, append([]nats.Option{
		nats.Name("weave-bus"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
		nats.ReconnectHandler(func(*nats.Conn) {
			if !b.closed.Load() {
				go b.reregister()
			}
		}),
		// A subscription the account's permissions refuse is reported
		// here; the default handler would print to stderr.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}, connOpts...)...,
	)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
			return fmt.Errorf("connect to NATS at %s: the server refused the credentials: %w (give them with bus.nats.*; see docs/bus-nats.md)", url, err)
		}
		return fmt.Errorf("connect to NATS at %s: %w (is nats-server running with -js?)", url, err)
	}
	b.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream on %s: %w", url, err)
	}
	b.js = js
	b.retStream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              retainedStream,
		Subjects:          []string{retainedPrefix + ">"},
		MaxMsgsPerSubject: 1,
		Duplicates:        b.opts.IdempotencyWindow,
		AllowDirect:       true,
		Storage:           jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("create stream %s on %s: %w (the server needs JetStream enabled)", retainedStream, url, err)
	}
	if b.subsKV, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: subsBucket, Storage: jetstream.FileStorage}); err != nil {
		return fmt.Errorf("create bucket %s on %s: %w", subsBucket, url, err)
	}
	if b.dlqKV, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: dlqBucket, Storage: jetstream.FileStorage}); err != nil {
		return fmt.Errorf("create bucket %s on %s: %w", dlqBucket, url, err)
	}
	if err := b.limitDeadLetters(ctx); err != nil {
		return fmt.Errorf("limit bucket %s on %s: %w", dlqBucket, url, err)
	}
	if err := b.watchRegistry(ctx); err != nil {
		return err
	}
	// One subscription per class: an account without the right to a
	// protected class has that subscription refused by the server, and
	// keeps the others.
	for _, class := range classes() {
		pub, err := nc.Subscribe(pubPrefix+class+".*", b.onRemotePublish)
		if err != nil {
			return fmt.Errorf("subscribe to forwarded publishes: %w", err)
		}
		req, err := nc.Subscribe(reqPrefix+class+"."+b.instance, b.onRemoteRequest)
		if err != nil {
			return fmt.Errorf("subscribe to forwarded requests: %w", err)
		}
		b.natsSubs = append(b.natsSubs, pub, req)
	}
	// FlushWithContext wants a deadline; a caller's context (a command's)
	// may have none.
	fctx, cancel := context.WithTimeout(ctx, b.opts.RequestTimeout)
	defer cancel()
	if err := nc.FlushWithContext(fctx); err != nil {
		return fmt.Errorf("flush NATS subscriptions: %w", err)
	}
	_, err = b.inner.Subscribe(ctx, dlqCapture, b.persistDeadLetter, bus.SubscribeOptions{Name: "natsbus-dead-letter-store", Policy: bus.ContinueAll})
	return err
}

// limitDeadLetters bounds the dead-letter bucket's stream to
// Options.MaxDeadLetters entries, dropping the oldest. The bucket's own
// config has no count limit, so its stream is updated directly; purge
// markers count too, so the bucket may hold fewer live dead letters.
func (b *Bus) limitDeadLetters(ctx context.Context) error {
	s, err := b.js.Stream(ctx, "KV_"+dlqBucket)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	if cfg.MaxMsgs == int64(b.opts.MaxDeadLetters) && cfg.Discard == jetstream.DiscardOld {
		return nil
	}
	cfg.MaxMsgs = int64(b.opts.MaxDeadLetters)
	cfg.Discard = jetstream.DiscardOld
	_, err = b.js.UpdateStream(ctx, cfg)
	return err
}

// watchRegistry loads the subscription registry and keeps it current.
func (b *Bus) watchRegistry(ctx context.Context) error {
	w, err := b.subsKV.WatchAll(b.ctx)
	if err != nil {
		return fmt.Errorf("watch bucket %s: %w", subsBucket, err)
	}
	b.watcher = w
	ready := make(chan struct{})
	b.watchWG.Add(1)
	go func() {
		defer b.watchWG.Done()
		once := sync.Once{}
		for e := range w.Updates() {
			if e == nil {
				once.Do(func() { close(ready) })
				continue
			}
			inst, _, _ := strings.Cut(e.Key(), ".")
			b.regMu.Lock()
			if e.Operation() == jetstream.KeyValuePut {
				b.registry[e.Key()] = regEntry{instance: inst, pattern: string(e.Value()), rev: e.Revision()}
			} else {
				delete(b.registry, e.Key())
			}
			b.regMu.Unlock()
		}
		once.Do(func() { close(ready) })
	}()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("load subscription registry: %w", ctx.Err())
	}
}

func (b *Bus) isRetained(topic string) bool   { return matchAny(b.retained, topic) }
func (b *Bus) isAppendOnly(topic string) bool { return matchAny(b.appendOn, topic) }

func matchAny(patterns []string, topic string) bool {
	for _, p := range patterns {
		if bus.Match(p, topic) {
			return true
		}
	}
	return false
}

// prepare validates and stamps m and stores it when its topic is retained
// or append-only. deliver is false for a duplicate.
func (b *Bus) prepare(ctx context.Context, m *bus.Message) (res bus.Result, deliver bool, err error) {
	if b.closed.Load() {
		return res, false, bus.ErrClosed
	}
	if err := bus.ValidateTopic(m.Topic); err != nil {
		return res, false, err
	}
	if m.ID == "" {
		m.ID = nuid.Next()
	}
	if m.Time.IsZero() {
		m.Time = b.opts.Clock.Now()
	}
	res.MessageID = m.ID
	ret, app := b.isRetained(m.Topic), b.isAppendOnly(m.Topic)
	if !ret && !app {
		return res, true, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return res, false, fmt.Errorf("encode message for %s: %w", m.Topic, err)
	}
	id := dedupID(m.Topic, m.IdempotencyKey, nuid.Next())
	dup := false
	if ret {
		_, d, err := b.store(ctx, retainedPrefix+EncodeTopic(m.Topic), "", data, id)
		if err != nil {
			return res, false, err
		}
		dup = d
	}
	if app {
		seq, d, err := b.store(ctx, logPrefix+EncodeTopic(m.Topic), m.Topic, data, id)
		if err != nil {
			return res, false, err
		}
		res.Offset, dup = seq, d
	}
	if dup {
		res.Duplicate, res.Offset = true, 0
		return res, false, nil
	}
	return res, true, nil
}

// store writes data to subject in JetStream with message id id, retrying
// through disconnects. logTopic is set for append-only topics, whose stream
// is created on first use.
func (b *Bus) store(ctx context.Context, subject, logTopic string, data []byte, id string) (uint64, bool, error) {
	deadline := time.Now().Add(b.opts.RequestTimeout)
	failed := false
	wait := 20 * time.Millisecond
	for {
		if logTopic != "" {
			if err := b.ensureLog(ctx, logTopic); err != nil {
				failed = true
				if werr := b.backoff(ctx, deadline, &wait); werr != nil {
					return 0, false, fmt.Errorf("store on %s: %w (last error: %v)", subject, werr, err)
				}
				continue
			}
		}
		actx, cancel := context.WithTimeout(ctx, storeAttempt)
		ack, err := b.js.PublishMsg(actx, &nats.Msg{Subject: subject, Data: data}, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			// A duplicate after a failed try is our own earlier try, stored
			// before its ack was lost.
			return ack.Sequence, ack.Duplicate && !failed, nil
		}
		failed = true
		if logTopic != "" && (errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound)) {
			b.logs.Delete(logStream(logTopic))
		}
		if werr := b.backoff(ctx, deadline, &wait); werr != nil {
			return 0, false, fmt.Errorf("store on %s: %w (last error: %v); check that the NATS server is up with JetStream", subject, werr, err)
		}
	}
}

// backoff waits before the next store attempt. It uses real time: it paces
// network retries, not bus semantics.
func (b *Bus) backoff(ctx context.Context, deadline time.Time, wait *time.Duration) error {
	if time.Now().Add(*wait).After(deadline) {
		return fmt.Errorf("gave up after %s", b.opts.RequestTimeout)
	}
	t := time.NewTimer(*wait)
	defer t.Stop()
	*wait = min(*wait*2, time.Second)
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.ctx.Done():
		return bus.ErrClosed
	}
}

func (b *Bus) ensureLog(ctx context.Context, topic string) error {
	name := logStream(topic)
	if _, ok := b.logs.Load(name); ok {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, storeAttempt)
	defer cancel()
	s, err := b.js.CreateOrUpdateStream(actx, jetstream.StreamConfig{
		Name:        name,
		Description: "weave append-only topic " + topic,
		Subjects:    []string{logPrefix + EncodeTopic(topic)},
		MaxMsgs:     int64(b.opts.MaxLogMessages),
		Discard:     jetstream.DiscardOld,
		Duplicates:  b.opts.IdempotencyWindow,
		AllowDirect: true,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("create stream for %s: %w", topic, err)
	}
	b.logs.Store(name, s)
	return nil
}

// Options returns the options in effect, defaults filled in.
func (b *Bus) Options() bus.Options { return b.opts }

// Publish implements bus.Bus: local subscriptions get m as from
// bus.Memory.Publish, and m is forwarded to the other processes on the
// server, which deliver it to theirs.
func (b *Bus) Publish(ctx context.Context, m bus.Message) (bus.Result, error) {
	res, deliver, err := b.prepare(ctx, &m)
	if err != nil || !deliver {
		return res, err
	}
	local, err := b.inner.Publish(ctx, m)
	if err != nil {
		return res, err
	}
	res.Delivered, res.DeadLettered = local.Delivered, local.DeadLettered
	if local.Duplicate {
		res.Duplicate = true
		return res, nil
	}
	if err := b.forward(m); err != nil {
		return res, err
	}
	return res, nil
}

func (b *Bus) forward(m bus.Message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode message for %s: %w", m.Topic, err)
	}
	msg := &nats.Msg{Subject: pubSubject(m.Topic), Data: data, Header: nats.Header{}}
	msg.Header.Set(originHeader, b.instance)
	if err := b.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("forward %s to other processes: %w", m.Topic, err)
	}
	return nil
}

func (b *Bus) onRemotePublish(msg *nats.Msg) {
	if msg.Header.Get(originHeader) == b.instance {
		return
	}
	var m bus.Message
	if err := json.Unmarshal(msg.Data, &m); err != nil {
		return // not ours: only buses publish under weave.pub
	}
	if msg.Subject != pubSubject(m.Topic) {
		// The subject is what NATS permissions judged; a message whose
		// topic is not the one its subject names (agent:x sent on an open
		// subject) would carry a right its sender was not given.
		return
	}
	_, _ = b.inner.Publish(b.ctx, m)
}

// Request implements bus.Bus. The walk covers this process's subscriptions
// first, newest first, exactly as bus.Memory; unless a policy stopped it, it
// goes on to each other process with a matching subscription, the process
// with the newest such subscription first, each walking its own list.
func (b *Bus) Request(ctx context.Context, m bus.Message) (bus.Result, error) {
	res, deliver, err := b.prepare(ctx, &m)
	if err != nil || !deliver {
		return res, err
	}
	local, err := b.inner.Request(ctx, m)
	merge(&res, local)
	if local.Duplicate {
		res.Duplicate = true
		return res, err
	}
	if err != nil || res.Stopped {
		return res, err
	}
	for _, t := range b.remoteTargets(m.Topic) {
		remote, err := b.requestRemote(ctx, t, m)
		if errors.Is(err, nats.ErrNoResponders) {
			b.forgetInstance(t.instance)
			continue
		}
		if err != nil {
			return res, err
		}
		merge(&res, remote)
		if res.Stopped {
			break
		}
	}
	return res, nil
}

func merge(res *bus.Result, r bus.Result) {
	res.Delivered += r.Delivered
	res.Acks = append(res.Acks, r.Acks...)
	res.Stopped = res.Stopped || r.Stopped
	res.DeadLettered = res.DeadLettered || r.DeadLettered
}

// forgetInstance removes the registry entries of a bus process that no
// longer answers: it died without Close, or it is cut off and will
// register again when it reconnects.
func (b *Bus) forgetInstance(instance string) {
	b.regMu.Lock()
	var keys []string
	for k, e := range b.registry {
		if e.instance == instance {
			keys = append(keys, k)
		}
	}
	b.regMu.Unlock()
	ctx, cancel := context.WithTimeout(b.ctx, storeAttempt)
	defer cancel()
	for _, k := range keys {
		_ = b.subsKV.Delete(ctx, k)
	}
}

// reregister writes this process's subscriptions to the registry again,
// after a reconnect, in case another process removed them meanwhile.
func (b *Bus) reregister() {
	ctx, cancel := context.WithTimeout(b.ctx, storeAttempt)
	defer cancel()
	b.mine.Range(func(k, v any) bool {
		_, _ = b.subsKV.Put(ctx, k.(string), []byte(v.(string)))
		return ctx.Err() == nil
	})
}

type remoteTarget struct {
	instance string
	matching int
	newest   uint64
}

func (b *Bus) remoteTargets(topic string) []remoteTarget {
	b.regMu.Lock()
	byInst := map[string]*remoteTarget{}
	for _, e := range b.registry {
		if e.instance == b.instance || !bus.Match(e.pattern, topic) {
			continue
		}
		t := byInst[e.instance]
		if t == nil {
			t = &remoteTarget{instance: e.instance}
			byInst[e.instance] = t
		}
		t.matching++
		t.newest = max(t.newest, e.rev)
	}
	b.regMu.Unlock()
	out := make([]remoteTarget, 0, len(byInst))
	for _, t := range byInst {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].newest > out[j].newest })
	return out
}

type remoteReply struct {
	Result bus.Result `json:"result"`
	Error  string     `json:"error,omitempty"`
}

func (b *Bus) requestRemote(ctx context.Context, t remoteTarget, m bus.Message) (bus.Result, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return bus.Result{}, fmt.Errorf("encode message for %s: %w", m.Topic, err)
	}
	// A guard only: the remote walk bounds each of its handlers itself.
	guard := time.Duration(t.matching*b.opts.MaxAttempts)*b.opts.RequestTimeout + b.opts.MaxRetryDelay
	rctx, cancel := context.WithTimeout(ctx, guard)
	defer cancel()
	reply, err := b.nc.RequestWithContext(rctx, reqSubject(m.Topic, t.instance), data)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return bus.Result{}, err
		}
		return bus.Result{}, fmt.Errorf("request on %s to bus process %s: %w", m.Topic, t.instance, err)
	}
	var rr remoteReply
	if err := json.Unmarshal(reply.Data, &rr); err != nil {
		return bus.Result{}, fmt.Errorf("request on %s: bad reply from bus process %s: %w", m.Topic, t.instance, err)
	}
	if rr.Error != "" {
		return rr.Result, fmt.Errorf("request on %s in bus process %s: %s", m.Topic, t.instance, rr.Error)
	}
	return rr.Result, nil
}

func (b *Bus) onRemoteRequest(msg *nats.Msg) {
	var m bus.Message
	var rr remoteReply
	if err := json.Unmarshal(msg.Data, &m); err != nil {
		rr.Error = fmt.Sprintf("decode forwarded request: %v", err)
	} else if msg.Subject != reqSubject(m.Topic, b.instance) {
		// As in onRemotePublish: the right to a topic is the right to its
		// subject, which NATS checked; a topic smuggled under another
		// class is refused.
		rr.Error = fmt.Sprintf("request on %s sent on %s: a topic's requests go on its own class of subject", m.Topic, msg.Subject)
	} else {
		// Handlers may take long; do not hold up the NATS dispatcher.
		go func() {
			res, err := b.inner.Request(b.ctx, m)
			rr := remoteReply{Result: res}
			if err != nil {
				rr.Error = err.Error()
			}
			data, _ := json.Marshal(rr)
			_ = msg.Respond(data)
		}()
		return
	}
	data, _ := json.Marshal(rr)
	_ = msg.Respond(data)
}

// Subscribe implements bus.Bus. The subscription lives in this process; it
// is also written to the shared registry so requests from other processes
// find it.
func (b *Bus) Subscribe(ctx context.Context, pattern string, h bus.Handler, opts bus.SubscribeOptions) (bus.Subscription, error) {
	if b.closed.Load() {
		return nil, bus.ErrClosed
	}
	s, err := b.inner.Subscribe(ctx, pattern, h, opts)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s.%d", b.instance, b.nextSub.Add(1))
	if _, err := b.subsKV.Put(ctx, key, []byte(pattern)); err != nil {
		_ = s.Unsubscribe()
		return nil, fmt.Errorf("register subscription to %q: %w", pattern, err)
	}
	b.mine.Store(key, pattern)
	return &subscription{Subscription: s, b: b, key: key}, nil
}

type subscription struct {
	bus.Subscription
	b   *Bus
	key string
}

func (s *subscription) Unsubscribe() error {
	if err := s.Subscription.Unsubscribe(); err != nil {
		return err
	}
	s.b.mine.Delete(s.key)
	ctx, cancel := context.WithTimeout(context.Background(), storeAttempt)
	defer cancel()
	if err := s.b.subsKV.Delete(ctx, s.key); err != nil {
		return fmt.Errorf("unsubscribe %q: remove from the registry: %w", s.Pattern(), err)
	}
	return nil
}

// Retained implements bus.Bus.
func (b *Bus) Retained(ctx context.Context, topic string) (bus.Message, bool, error) {
	if err := bus.ValidateTopic(topic); err != nil {
		return bus.Message{}, false, err
	}
	if !b.isRetained(topic) {
		return bus.Message{}, false, fmt.Errorf("topic %q is not retained (retained patterns: %s)", topic, strings.Join(b.retained, ", "))
	}
	raw, err := b.retStream.GetLastMsgForSubject(ctx, retainedPrefix+EncodeTopic(topic))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return bus.Message{}, false, nil
	}
	if err != nil {
		return bus.Message{}, false, fmt.Errorf("read retained %s: %w", topic, err)
	}
	var m bus.Message
	if err := json.Unmarshal(raw.Data, &m); err != nil {
		return bus.Message{}, false, fmt.Errorf("decode retained %s: %w", topic, err)
	}
	return m, true, nil
}

// Forget drops what topic keeps in JetStream: its retained message and its
// append-only stream. A later message on it starts afresh, from offset 1.
func (b *Bus) Forget(ctx context.Context, topic string) error {
	if err := bus.ValidateTopic(topic); err != nil {
		return err
	}
	if b.isAppendOnly(topic) {
		name := logStream(topic)
		b.logs.Delete(name)
		if err := b.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("forget %s: %w", topic, err)
		}
	}
	if b.isRetained(topic) {
		if err := b.retStream.Purge(ctx, jetstream.WithPurgeSubject(retainedPrefix+EncodeTopic(topic))); err != nil {
			return fmt.Errorf("forget %s: %w", topic, err)
		}
	}
	return nil
}

// Replay implements bus.Bus. Offsets are the sequence numbers of the
// topic's own stream.
func (b *Bus) Replay(ctx context.Context, topic string, from uint64, fn func(offset uint64, m bus.Message) bool) error {
	if err := bus.ValidateTopic(topic); err != nil {
		return err
	}
	if !b.isAppendOnly(topic) {
		return fmt.Errorf("topic %q is not append-only (append-only patterns: %s)", topic, strings.Join(b.appendOn, ", "))
	}
	from = max(from, 1)
	s, err := b.js.Stream(ctx, logStream(topic))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil // nothing was ever published there
	}
	if err != nil {
		return fmt.Errorf("replay %s: %w", topic, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("replay %s: %w", topic, err)
	}
	from = max(from, info.State.FirstSeq) // messages past the limit are gone
	for seq := from; seq <= info.State.LastSeq; seq++ {
		raw, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("replay %s at %d: %w", topic, seq, err)
		}
		var m bus.Message
		if err := json.Unmarshal(raw.Data, &m); err != nil {
			return fmt.Errorf("replay %s: decode message %d: %w", topic, seq, err)
		}
		if !fn(seq, m) {
			return nil
		}
	}
	return nil
}

// persistDeadLetter copies a dead letter announced by the local bus to the
// shared bucket.
func (b *Bus) persistDeadLetter(ctx context.Context, m bus.Message) (bus.Ack, error) {
	var dl bus.DeadLetter
	if err := json.Unmarshal(m.Payload, &dl); err != nil {
		return bus.Ack{}, nil
	}
	b.writeDeadLetter(ctx, dl)
	return bus.Ack{}, nil
}

func (b *Bus) writeDeadLetter(ctx context.Context, dl bus.DeadLetter) {
	data, err := json.Marshal(dl)
	if err != nil {
		return
	}
	b.dlqMu.Lock()
	if b.persisted[dl.ID] || b.replayed[dl.ID] || b.writing[dl.ID] != nil {
		b.dlqMu.Unlock()
		return
	}
	// ReplayDeadLetter waits for done, so a write it overtook cannot leave
	// the dead letter listed after the replay.
	done := make(chan struct{})
	b.writing[dl.ID] = done
	b.dlqMu.Unlock()
	defer close(done)

	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeAttempt)
	defer cancel()
	_, err = b.dlqKV.Put(pctx, dl.ID, data)
	b.dlqMu.Lock()
	delete(b.writing, dl.ID)
	if err != nil {
		b.dlqMu.Unlock()
		return // retried by the next DeadLetters or Close
	}
	b.persisted[dl.ID] = true
	replayed := b.replayed[dl.ID]
	b.dlqMu.Unlock()
	if replayed { // replayed while we were writing it
		_ = b.dlqKV.Purge(pctx, dl.ID)
	}
}

// DeadLetters implements bus.Bus: this process's dead letters and those
// stored by other processes (or earlier runs), oldest first.
func (b *Bus) DeadLetters(ctx context.Context) ([]bus.DeadLetter, error) {
	local, err := b.inner.DeadLetters(ctx)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(local))
	for _, dl := range local {
		seen[dl.ID] = true
		b.writeDeadLetter(ctx, dl)
	}
	stored, err := b.storedDeadLetters(ctx)
	if err != nil {
		return nil, err
	}
	out := local
	for _, dl := range stored {
		if !seen[dl.ID] {
			out = append(out, dl)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	// Local and stored dead letters are bounded each; together they keep
	// the newest Options.MaxDeadLetters.
	if n := len(out) - b.opts.MaxDeadLetters; n > 0 {
		for _, dl := range out[:n] {
			_ = b.dlqKV.Purge(ctx, dl.ID)
		}
		out = out[n:]
	}
	return out, nil
}

func (b *Bus) storedDeadLetters(ctx context.Context) ([]bus.DeadLetter, error) {
	lister, err := b.dlqKV.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	var out []bus.DeadLetter
	for _, k := range keys {
		e, err := b.dlqKV.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read dead letter %s: %w", k, err)
		}
		var dl bus.DeadLetter
		if err := json.Unmarshal(e.Value(), &dl); err != nil {
			return nil, fmt.Errorf("decode dead letter %s: %w", k, err)
		}
		out = append(out, dl)
	}
	return out, nil
}

// ReplayDeadLetter implements bus.Bus. A dead letter of this process goes
// back to its subscriber as bus.Memory does; one stored by another process
// is sent again to its topic.
func (b *Bus) ReplayDeadLetter(ctx context.Context, id string) (bus.Result, error) {
	if b.closed.Load() {
		return bus.Result{}, bus.ErrClosed
	}
	b.dlqMu.Lock()
	b.replayed[id] = true
	writing := b.writing[id]
	b.dlqMu.Unlock()
	if writing != nil {
		// The write purges what it stored once it sees the replay.
		select {
		case <-writing:
		case <-ctx.Done():
			return bus.Result{}, fmt.Errorf("replay dead letter %s: %w", id, ctx.Err())
		}
	}
	res, err := b.inner.ReplayDeadLetter(ctx, id)
	if !errors.Is(err, bus.ErrNotFound) {
		_ = b.dlqKV.Purge(ctx, id)
		return res, err
	}
	e, gerr := b.dlqKV.Get(ctx, id)
	if errors.Is(gerr, jetstream.ErrKeyNotFound) {
		return bus.Result{}, err
	}
	if gerr != nil {
		return bus.Result{}, fmt.Errorf("read dead letter %s: %w", id, gerr)
	}
	var dl bus.DeadLetter
	if err := json.Unmarshal(e.Value(), &dl); err != nil {
		return bus.Result{}, fmt.Errorf("decode dead letter %s: %w", id, err)
	}
	if err := b.dlqKV.Purge(ctx, id); err != nil {
		return bus.Result{}, fmt.Errorf("remove dead letter %s: %w", id, err)
	}
	m := dl.Message
	m.Attempt = 0
	return b.Request(ctx, m)
}

// Close implements bus.Bus: local delivery stops as with bus.Memory, this
// process's subscriptions leave the registry, and its dead letters are
// written to JetStream while the server is reachable.
func (b *Bus) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	for _, s := range b.natsSubs {
		_ = s.Unsubscribe()
	}
	err := b.inner.Close()
	ctx, cancel := context.WithTimeout(context.Background(), storeAttempt)
	defer cancel()
	if dls, derr := b.inner.DeadLetters(ctx); derr == nil {
		for _, dl := range dls {
			b.writeDeadLetter(ctx, dl)
		}
	}
	b.mine.Range(func(k, _ any) bool {
		_ = b.subsKV.Delete(ctx, k.(string))
		return true
	})
	b.cancel()
	if b.watcher != nil {
		_ = b.watcher.Stop()
	}
	b.watchWG.Wait()
	b.nc.Close()
	return err
}
