// Package bus is Weave's delivery layer: topics, subscriptions and their
// propagation policies, requests with acknowledgements, retained and
// append-only topics, and retries with dead letters.
//
// # Usage
//
// A Bus is built by a backend: NewMemory here (embedded, the default), or the
// nats backend for going past one machine. Everything else is written
// against the Bus interface:
//
//	b, err := bus.NewMemory(bus.DefaultOptions())
//	sub, err := b.Subscribe(ctx, "agent:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
//		return bus.Ack{Processed: true}, nil
//	}, bus.SubscribeOptions{Name: "tapestry"})
//	res, err := b.Request(ctx, bus.Message{Topic: "agent:tapestry", Payload: payload})
//
// Publish is fire-and-forget: the message is put on the queue of each
// matching subscription and Publish returns. Request is the interceptor
// walk: matching subscriptions are called one at a time, their acks come
// back in the Result, and each subscription's Policy decides whether the
// walk goes on. The JSON-RPC face maps a peer's sendMessage onto Request and
// makes each remote subscription a Handler that calls the peer; the host
// maps hook dispatch and delegation onto Request and events onto Publish.
//
// # Topics and patterns
//
// Topics are non-empty printable strings without wildcards (ValidateTopic).
// Patterns follow Match: fnmatch globs where '*' crosses ':' and '/',
// prefix patterns ending in ':', '-', '.', '/' or '_', exact otherwise.
//
// Weave's own topics are one table (Topics, in topics.go), owner by owner:
// loop, session, model events, agents, hooks, system, collab. The bus
// defaults (which topics are retained or append-only), the topics that need
// the token on a face, the topics the default handler never starts an agent
// on, and the topic table of docs/bus-jsonrpc.md are all read from it; a
// test fails when a copy disagrees.
//
// # Which subscriptions get a message: last match wins
//
// Subscriptions form one ordered list across all subscribers. Delivery walks
// it newest first. A newer subscription with an identical pattern string
// supersedes an older one, which receives nothing until the newer one is
// removed. So with "inbound:*" (A), then "inbound:critical" (B), then
// "inbound:*" (C), a message on inbound:critical goes to C then B, and one on
// inbound:normal goes to C only. The same set, in the same order, applies to
// Publish and Request. The set for a topic is cached and recomputed only
// when subscriptions change.
//
// # Which rule applies where
//
//   - Last match wins on every topic but broadcast ones: the JSON-RPC face
//     (bub's peers subscribe through it, and bub's server behaves this
//     way), host requests (hooks, delegation), agent mailboxes and thread
//     reply topics.
//   - Broadcast topics of the collaboration primitives, thread.<id>.broadcast
//     (BroadcastPattern, IsBroadcast), reach every matching subscription,
//     newest first: identical patterns do not supersede each other there,
//     whichever face or process subscribed. That is how every bidder of a
//     contract net hears its call for proposals. Policies still apply to a
//     Request's walk; Publish delivers to the whole set.
//   - Observer subscriptions (SubscribeOptions.Observer) stand outside the
//     rule on any topic: a face that keeps state from a topic, such as the
//     v1 envelope face reading session:<id>, subscribes this way so that a
//     peer subscribing to the same pattern cannot take its messages away.
//     SubscribeOptions.Accept lets such a subscriber refuse messages (its
//     own writes) before they are queued.
//
// # Policies
//
// Request applies the Policy of the subscription that just answered:
// StopOnProcessed (the default) stops on a processed ack or one asking to
// stop propagation; StopOnStop stops only on the latter; ContinueAll never
// stops. Publish does not wait for acks, so it delivers to the whole set.
//
// # Ordering
//
// Each subscription has one FIFO queue drained by one goroutine, and Publish
// enqueues before it returns. So messages published by one goroutine reach
// each subscription in publish order, across topics too. Messages from
// different publishers are ordered only by when their Publish calls ran.
// A retry holds the subscription's queue while it waits, so retries keep the
// order too. Request calls handlers directly and is ordered by its caller;
// a handler may therefore run concurrently with itself (one Publish
// delivery and any number of Requests) and must be safe for that.
//
// # Slow subscribers
//
// A subscription's queue holds QueueSize messages (256 by default); it
// takes memory as messages wait in it (at most what its longest backlog
// took, until the subscription ends), not for its capacity. When it
// is full, Publish waits up to Options.EnqueueTimeout (5s by default) for
// room, then moves that delivery to the dead letters with the reason "queue
// full" and goes on with the other subscriptions. A slow subscriber therefore
// never loses a message silently, and holds up its publisher (and so the
// deliveries that publisher makes next) for at most EnqueueTimeout per
// message; the other subscriptions keep draining their own queues meanwhile.
// A subscription given its own Timeout also gets it as the deadline of its
// Publish deliveries. A publisher that must never wait (it holds a lock
// others need) publishes with NoWait(ctx): a full queue then dead-letters
// that delivery at once.
//
// Request calls are bounded by the subscription's Timeout
// (Options.RequestTimeout by default, 30s): a handler that does not answer
// in time gives a not-processed ack with Error set, its context is
// cancelled, and the walk goes on. The memory backend calls each handler on
// a goroutine of its own so that a stuck one is left behind; a subscription
// marked Cooperative (its handler returns once its context ends, as a remote
// peer's does) is called on the requester's goroutine instead, which is
// cheaper, and the walk goes on when the handler gives up.
//
// # Retries and dead letters
//
// A handler asks for a retry with Ack.ShouldRetry and Ack.RetrySeconds (capped
// at Options.MaxRetryDelay). The bus tries again after that delay, up to
// Options.MaxAttempts attempts in all (3 by default), then dead-letters the
// message for that subscriber. In Publish deliveries a handler error or
// panic is retried the same way after Options.RetryDelay, since nobody else
// would see it. In a Request, an error or timeout is reported in the ack and
// dead-lettered at once, so a dead subscriber costs the caller one timeout,
// not MaxAttempts of them. Each dead letter is announced on DeadLetterTopic,
// listed by DeadLetters and re-sent by ReplayDeadLetter. The newest
// Options.MaxDeadLetters (10,000 by default) are kept. An announcement its
// subscriber fails on is dropped, not dead-lettered again. Time is read from
// Options.Clock, so tests drive delays and timeouts with a fake clock.
//
// # Retained and append-only topics
//
// Topics matching Options.Retained keep their last message (Retained).
// Topics matching Options.AppendOnly keep their newest
// Options.MaxLogMessages messages (100,000 by default) with an offset from 1
// (Result.Offset, Replay); offsets keep counting past the dropped ones, and
// a Replay from an offset no longer kept starts at the oldest kept. Both are
// stored before delivery, whether or not anyone is subscribed. The memory
// backend keeps at most Options.MaxTopics such topics (10,000): a publish
// that would keep one more fails with an error naming bus.max_topics. They
// hold at most Options.MaxStoreBytes together (256 MiB): an append drops
// its topic's oldest messages, then other logs' oldest, to fit (a
// dead letter, without the payloads, says which offsets went), and a
// message that still does not fit fails naming bus.max_store_bytes; both
// errors are ErrLimit to errors.Is, which the faces answer as a limit. Both
// backends also have Forget(ctx, topic), which drops what a topic keeps; a
// face calls it for topics nobody will read again.
//
// # Idempotency
//
// A message with an IdempotencyKey is delivered once per topic and key
// within Options.IdempotencyWindow (10 minutes by default); repeats return a
// Result with Duplicate set and are not delivered or stored.
//
// # IDs and times
//
// Request stamps an empty Message.ID and a zero Message.Time; so does every
// path that keeps a message (retained and append-only topics, dead
// letters). A Publish on any other topic passes ID and Time through as the
// publisher gave them: reading the clock and allocating an ID would cost
// more than the rest of the delivery. Publishers that need them set them.
//
// # Durability
//
// The memory backend keeps everything in the process: retained values,
// append-only logs and dead letters are gone when it exits, and Close moves
// messages still queued to the dead letters. Close cancels the context
// handlers get and waits for them up to Options.RequestTimeout. The nats backend keeps
// append-only, retained and dead-letter topics in JetStream.
//
// # Testing
//
// Package bustest holds the conformance suite every backend passes
// (bustest.Run), a recording handler, a fake clock and WaitFor.
package bus
