package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Message is one message on the bus. Publishers fill Topic and Payload, and
// may give an ID and a Time. The bus fills an empty ID and a zero Time for
// every Request, for messages it keeps (retained and append-only topics)
// and for dead letters; on other topics Publish passes them through as
// given, which keeps the clock and the allocator off its hot path. The bus
// sets Attempt on each delivery. Handlers receive a copy; Payload and
// Headers are shared between subscribers and must not be modified.
type Message struct {
	ID             string            `json:"id"`
	Topic          string            `json:"topic"`
	Payload        json.RawMessage   `json:"payload,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	Time           time.Time         `json:"time"`
	// Attempt is 1 on the first delivery to a subscriber and grows by one
	// on each retry to that subscriber.
	Attempt int `json:"attempt,omitempty"`
}

// Ack is one subscriber's answer to a delivery. It carries the fields of the
// JSON-RPC processMessage and sendMessage results.
type Ack struct {
	// Subscriber is the subscription's name; the bus fills it when empty.
	Subscriber      string `json:"subscriber"`
	Processed       bool   `json:"processed"`
	StopPropagation bool   `json:"stop_propagation,omitempty"`
	ShouldRetry     bool   `json:"should_retry,omitempty"`
	// RetrySeconds is the delay the subscriber asks for before the next
	// attempt; fractions are allowed, negative counts as zero.
	RetrySeconds float64 `json:"retry_seconds,omitempty"`
	// Message is the subscriber's human-readable status.
	Message string `json:"message,omitempty"`
	// Error is set by the bus when the handler returned an error, panicked or
	// timed out.
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Result is what a Publish or Request did.
type Result struct {
	// Delivered counts the subscribers the message was handed to: queued
	// for Publish, called for Request.
	Delivered int `json:"delivered"`
	// Acks holds the final ack of each subscriber called by Request, in the
	// order they were called. Publish leaves it empty.
	Acks []Ack `json:"acks,omitempty"`
	// Stopped is true when a subscriber's policy ended a Request's walk.
	Stopped bool `json:"stopped,omitempty"`
	// DeadLettered is true when at least one delivery of this message went
	// to the dead-letter list.
	DeadLettered bool `json:"dead_lettered,omitempty"`
	// Duplicate is true when the idempotency key was seen within the window;
	// nothing was delivered.
	Duplicate bool `json:"duplicate,omitempty"`
	// Offset is the message's position (from 1) on an append-only topic, 0
	// on other topics.
	Offset uint64 `json:"offset,omitempty"`
	// MessageID is the message's ID, as given or as assigned by the bus
	// (see Message); empty for a Publish without ID on a plain topic.
	MessageID string `json:"message_id,omitempty"`
}

// Processed reports whether any subscriber acknowledged the message as
// processed.
func (r Result) Processed() bool {
	for _, a := range r.Acks {
		if a.Processed {
			return true
		}
	}
	return false
}

// Handler receives a message. A returned error, a panic or a timeout are
// turned into an Ack with Processed false and Error set.
//
// Handlers of one subscription may be called concurrently: Publish delivers
// through the subscription's queue one message at a time, while each Request
// calls the handler directly.
type Handler func(ctx context.Context, m Message) (Ack, error)

// Policy says when a Request's walk stops after a subscriber's ack. It is the
// policy of the subscription that just answered that counts.
type Policy string

// The propagation policies.
const (
	// StopOnProcessed stops the walk when the ack is processed or asks to
	// stop propagation. It is the default.
	StopOnProcessed Policy = "stopPropagationOnProcessed"
	// StopOnStop stops the walk only when the ack asks to stop propagation.
	StopOnStop Policy = "stopPropagationOnStop"
	// ContinueAll never stops the walk.
	ContinueAll Policy = "continueAll"
)

// ParsePolicy returns the policy named s; the empty string gives "" (meaning
// the bus default).
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "", StopOnProcessed, StopOnStop, ContinueAll:
		return p, nil
	}
	return "", fmt.Errorf("unknown propagation policy %q (use %s, %s or %s)", s, StopOnProcessed, StopOnStop, ContinueAll)
}

// Stops reports whether the walk stops after ack under policy p.
func (p Policy) Stops(a Ack) bool {
	switch p {
	case ContinueAll:
		return false
	case StopOnStop:
		return a.StopPropagation
	default:
		return a.Processed || a.StopPropagation
	}
}

// SubscribeOptions tune one subscription. The zero value takes the bus
// defaults.
type SubscribeOptions struct {
	// Policy is the propagation policy; empty means Options.DefaultPolicy.
	Policy Policy
	// Name identifies the subscriber in acks and dead letters (a JSON-RPC
	// client id, an agent name). Empty gives a generated name.
	Name string
	// QueueSize bounds the subscription's queue; 0 means Options.QueueSize.
	QueueSize int
	// Timeout bounds each call of the handler made by Request; 0 means
	// Options.RequestTimeout. When set, it is also the deadline of the
	// context of Publish deliveries (real time: a context cannot follow a
	// fake clock), so a handler that honours its context, such as a remote
	// peer's, cannot hold its queue forever.
	Timeout time.Duration
	// Cooperative says the handler honours its context: it returns soon
	// after the context ends, as a remote peer's handler does. Request
	// then calls it on the requesting goroutine, with Timeout (real time)
	// as the context's deadline, instead of on a goroutine of its own that
	// the requester abandons at the timeout. That saves a goroutine and a
	// hand-off per delivery; a handler that ignores its context stalls its
	// requesters. Backends that always hand off may ignore it.
	Cooperative bool
	// Observer puts the subscription outside last match wins: it gets
	// every message matching its pattern, never supersedes an identical
	// pattern and is never superseded by one. A face that keeps state
	// from a topic (the v1 envelope face reading session:<id>) subscribes
	// this way, so that a peer subscribing to the same pattern cannot take
	// its messages away.
	Observer bool
	// Accept, when set, is asked about each matching message before it is
	// queued or the handler called; a message it refuses is not delivered
	// to this subscription (and not counted). It runs on the publisher's
	// goroutine, so it must be quick and must not block. It saves a
	// subscriber the hand-off of messages it would drop at once, such as
	// its own writes.
	Accept func(Message) bool
}

// Subscription is a live subscription. Unsubscribe stops new deliveries at
// once; messages already queued for it are still delivered.
type Subscription interface {
	Unsubscribe() error
	Pattern() string
	Name() string
}

// DeadLetter is a delivery the bus gave up on. Nothing is dropped silently:
// what cannot be delivered ends here, is announced on DeadLetterTopic and
// can be re-sent with ReplayDeadLetter.
type DeadLetter struct {
	ID      string  `json:"id"`
	Message Message `json:"message"`
	// Subscriber is the name of the subscription the delivery was for.
	Subscriber string `json:"subscriber"`
	// Pattern is that subscription's pattern.
	Pattern string `json:"pattern"`
	// Reason says why the bus gave up, in words a user can act on.
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	LastAck  Ack       `json:"last_ack"`
	Time     time.Time `json:"time"`
}

// DeadLetterTopic is where the bus announces each dead letter; the payload
// is the DeadLetter as JSON. Dead letters of this topic are stored but not
// announced again.
const DeadLetterTopic = "system:dead-letter"

// Bus is the delivery layer. The memory backend (NewMemory) and the nats
// backend implement it, and both pass the bustest conformance suite. See the
// package documentation for the guarantees.
type Bus interface {
	// Publish hands m to every matching subscription's queue and returns
	// without waiting for handlers. Acks asking for a retry are honoured,
	// handler errors are retried, and deliveries that still fail go to the
	// dead letters.
	Publish(ctx context.Context, m Message) (Result, error)
	// Request walks the matching subscriptions newest first, calling one
	// handler at a time with its timeout, collecting acks and stopping as
	// the answering subscription's policy says.
	Request(ctx context.Context, m Message) (Result, error)
	// Subscribe adds a subscription for pattern. ctx bounds the call only;
	// the subscription lives until Unsubscribe or Close.
	Subscribe(ctx context.Context, pattern string, h Handler, opts SubscribeOptions) (Subscription, error)
	// Retained returns the last message on a retained topic.
	Retained(ctx context.Context, topic string) (Message, bool, error)
	// Replay calls fn for each message of an append-only topic from offset
	// from (1 is the first message; 0 means 1) until fn returns false.
	Replay(ctx context.Context, topic string, from uint64, fn func(offset uint64, m Message) bool) error
	// DeadLetters lists the dead letters, oldest first.
	DeadLetters(ctx context.Context) ([]DeadLetter, error)
	// ReplayDeadLetter removes dead letter id and sends its message again,
	// as a Request, to the subscriber it was for if that subscriber is
	// still subscribed, else to its topic.
	ReplayDeadLetter(ctx context.Context, id string) (Result, error)
	// Close stops delivery. Messages still queued are moved to the dead
	// letters.
	Close() error
}

// Clock is the bus's source of time. Tests inject a fake one (see
// bustest.FakeClock) so retry delays and timeouts need no real waiting.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Errors callers can test with errors.Is.
var (
	// ErrClosed is returned by calls on a closed bus.
	ErrClosed = errors.New("bus is closed")
	// ErrNotFound is returned for an unknown dead letter or subscription.
	ErrNotFound = errors.New("not found")
)

type noWaitKey struct{}

// NoWait marks the Publish calls made with ctx as ones that must never
// wait: a subscription whose queue is full gets that delivery dead-lettered
// at once ("queue full") instead of after Options.EnqueueTimeout. A
// publisher holding a lock others wait on (the v1 envelope face's
// coordinator) publishes this way, so a subscriber that stops taking
// messages cannot stall it. A ctx already marked is returned as it is, so
// marking one ctx for many publishes costs nothing per publish.
func NoWait(ctx context.Context) context.Context {
	if noWait(ctx) {
		return ctx
	}
	return context.WithValue(ctx, noWaitKey{}, true)
}

func noWait(ctx context.Context) bool {
	v, _ := ctx.Value(noWaitKey{}).(bool)
	return v
}

// Defaults used when an Options field is zero.
const (
	DefaultMaxAttempts       = 3
	DefaultRequestTimeout    = 30 * time.Second
	DefaultRetryDelay        = time.Second
	DefaultMaxRetryDelay     = 5 * time.Minute
	DefaultEnqueueTimeout    = 5 * time.Second
	DefaultIdempotencyWindow = 10 * time.Minute
	DefaultQueueSize         = 256
	DefaultMaxLogMessages    = 100_000
	DefaultMaxDeadLetters    = 10_000
	DefaultMaxTopics         = 10_000
	// DefaultMaxStoreBytes bounds what retained and append-only topics
	// hold together.
	DefaultMaxStoreBytes = 256 << 20
	// MaxQueueSize bounds any subscription's queue.
	MaxQueueSize = 1 << 16
)

// Options configure a bus. Zero fields take the defaults above; Retained and
// AppendOnly are empty unless set (DefaultOptions sets Weave's own topics).
type Options struct {
	// DefaultPolicy applies to subscriptions that name none.
	DefaultPolicy Policy
	// MaxAttempts is the number of delivery attempts per subscriber before
	// a message is dead-lettered.
	MaxAttempts int
	// RequestTimeout bounds each handler call of a Request.
	RequestTimeout time.Duration
	// RetryDelay is the wait before retrying a Publish delivery whose
	// handler failed without asking for a retry delay.
	RetryDelay time.Duration
	// MaxRetryDelay caps the retry_seconds a subscriber may ask for.
	MaxRetryDelay time.Duration
	// EnqueueTimeout is how long Publish waits for room in a full
	// subscriber queue before dead-lettering that delivery.
	EnqueueTimeout time.Duration
	// IdempotencyWindow is how long an idempotency key is remembered.
	IdempotencyWindow time.Duration
	// QueueSize is the default bound of each subscription's queue.
	QueueSize int
	// Retained lists patterns of last-value topics.
	Retained []string
	// AppendOnly lists patterns of append-only topics.
	AppendOnly []string
	// MaxLogMessages is how many messages each append-only topic keeps;
	// older ones are dropped, and offsets keep counting.
	MaxLogMessages int
	// MaxDeadLetters is how many dead letters are kept; the oldest go
	// first.
	MaxDeadLetters int
	// MaxTopics bounds the retained and append-only topics the memory
	// backend keeps; a publish that would keep one more fails, naming
	// bus.max_topics. Forget makes room.
	MaxTopics int
	// MaxStoreBytes bounds the bytes that retained and append-only topics
	// hold together (payloads, topics, headers and a fixed cost per
	// message): an append drops its topic's oldest messages to make room,
	// and a publish that still does not fit fails, naming
	// bus.max_store_bytes.
	MaxStoreBytes int64
	// Clock is the time source; nil means the real clock.
	Clock Clock
}

// DefaultOptions returns the defaults with Weave's retained and append-only
// topics as the topic table (Topics) keeps them: retained loop:current and
// the v1 envelope face's session-info:* and session-agents:*; append-only
// loop:anchor, loop:trace, issue:*, project:*, the envelope face's session:*
// event logs and its session-index. The loop schema also calls
// agent:<name> last-value, but here those topics carry direct requests, so
// retaining them is left to config.
func DefaultOptions() Options {
	return Options{
		DefaultPolicy:     StopOnProcessed,
		MaxAttempts:       DefaultMaxAttempts,
		RequestTimeout:    DefaultRequestTimeout,
		RetryDelay:        DefaultRetryDelay,
		MaxRetryDelay:     DefaultMaxRetryDelay,
		EnqueueTimeout:    DefaultEnqueueTimeout,
		IdempotencyWindow: DefaultIdempotencyWindow,
		QueueSize:         DefaultQueueSize,
		MaxLogMessages:    DefaultMaxLogMessages,
		MaxDeadLetters:    DefaultMaxDeadLetters,
		MaxTopics:         DefaultMaxTopics,
		MaxStoreBytes:     DefaultMaxStoreBytes,
		Retained:          TopicPatterns(KeepLast),
		AppendOnly:        TopicPatterns(KeepAll),
	}
}

// WithDefaults returns o with every zero field set to its default. Retained
// and AppendOnly are left as they are.
func (o Options) WithDefaults() Options {
	if o.DefaultPolicy == "" {
		o.DefaultPolicy = StopOnProcessed
	}
	o.MaxAttempts = positiveOr(o.MaxAttempts, DefaultMaxAttempts)
	o.RequestTimeout = positiveOr(o.RequestTimeout, DefaultRequestTimeout)
	o.RetryDelay = positiveOr(o.RetryDelay, DefaultRetryDelay)
	o.MaxRetryDelay = positiveOr(o.MaxRetryDelay, DefaultMaxRetryDelay)
	o.EnqueueTimeout = positiveOr(o.EnqueueTimeout, DefaultEnqueueTimeout)
	o.IdempotencyWindow = positiveOr(o.IdempotencyWindow, DefaultIdempotencyWindow)
	o.QueueSize = positiveOr(o.QueueSize, DefaultQueueSize)
	o.MaxLogMessages = positiveOr(o.MaxLogMessages, DefaultMaxLogMessages)
	o.MaxDeadLetters = positiveOr(o.MaxDeadLetters, DefaultMaxDeadLetters)
	o.MaxTopics = positiveOr(o.MaxTopics, DefaultMaxTopics)
	o.MaxStoreBytes = positiveOr(o.MaxStoreBytes, DefaultMaxStoreBytes)
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	return o
}

// positiveOr returns v, or def when v is zero or negative.
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Validate reports the first invalid setting: an unknown policy or a bad
// topic pattern.
func (o Options) Validate() error {
	if _, err := ParsePolicy(string(o.DefaultPolicy)); err != nil {
		return fmt.Errorf("bus default policy: %w", err)
	}
	if o.QueueSize > MaxQueueSize {
		return fmt.Errorf("bus queue size %d is above the maximum of %d", o.QueueSize, MaxQueueSize)
	}
	for _, p := range o.Retained {
		if err := ValidatePattern(p); err != nil {
			return fmt.Errorf("bus retained topics: %w", err)
		}
	}
	for _, p := range o.AppendOnly {
		if err := ValidatePattern(p); err != nil {
			return fmt.Errorf("bus append-only topics: %w", err)
		}
	}
	return nil
}

// retryDelay returns the delay before the next attempt asked for by a, capped
// at max.
func retryDelay(a Ack, fallback, max time.Duration) time.Duration {
	if !a.ShouldRetry {
		return fallback
	}
	if a.RetrySeconds <= 0 {
		return 0
	}
	if a.RetrySeconds >= max.Seconds() {
		return max
	}
	return time.Duration(a.RetrySeconds * float64(time.Second))
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
