// Package jsonrpc is the bus's JSON-RPC 2.0 face over WebSocket
// (github.com/coder/websocket): peers in any language subscribe to topic
// patterns, send messages through the interceptor walk and answer the
// deliveries made to them. The wire, with examples of every method, the
// error codes, the guarantees and the Settled list of choices where bub's
// protocol document and its clients disagree, is docs/bus-jsonrpc.md in
// the repository; this comment is the summary.
//
// # Server
//
// NewServer wraps a bus.Bus in an http.Handler; Server.ListenAndServe and
// Server.Serve run it. Each connection must send initialize first: a
// clientId, and a clientInfo that may be null or absent (-32002 when it is
// not an object). A second initialize answers like the first. Any method
// but initialize and ping before it is -32001 "Not initialized". The
// result always lists capabilities.topics ([] when none). Methods:
//
//   - subscribe {topic, policy?, method?}: a bus subscription named after
//     the clientId with the given propagation policy. Deliveries are
//     JSON-RPC requests to the peer, "sendMessage" by default or
//     "processMessage" when method says so, with params {topic, payload,
//     messageId, attempt, headers, subscription}. The peer's result
//     ({processed, stopPropagation, should_retry, retry_seconds, message};
//     {success} is read as processed) is the subscriber's ack: it drives
//     the policy, retries and dead letters of the bus. The bus bounds the
//     wait (bus.Options.RequestTimeout); a peer that disconnects
//     mid-request gives a not-processed ack at once, never a hang.
//     Missing topic -32602; the same pattern twice on one connection is
//     the same subscription (success); more than Options.MaxSubscriptions
//     -32006.
//   - unsubscribe {topic}: the exact string given to subscribe, else -32004.
//   - sendMessage {topic, payload, headers?, idempotencyKey?}: bus.Request,
//     answered with {success, acks[{client_id, processed, message, ...}],
//     stopPropagation, messageId, delivered, ...}, stopPropagation being
//     true when a subscriber asked for it. payload is any object;
//     Options.RequirePayloadType (bus.require_payload_type) asks for a
//     string payload.type (-32602 without). The message carries the sender's clientId in the
//     header weave-client-id, set by the server over whatever the peer sent.
//     It is a label for acks and logs, never authority: on a NATS bus any
//     client allowed to publish writes its own headers, and rights come from
//     the bus token here and from NATS permissions there. As a notification it runs
//     the same walk and the result is dropped.
//   - ping: {timestamp}.
//
// A connection's subscriptions end with it.
//
// # Framing
//
// One JSON value per WebSocket message. Bad JSON is answered with -32700
// and id null; a value that is not a valid request is -32600; an empty
// batch is one -32600; a batch is answered with one array holding the
// responses of its requests in order, and not at all when it holds only
// notifications. Unknown methods are -32601. A frame larger than
// Options.MaxFrameBytes closes the connection with status 1009 (message too
// big); the peer reconnects.
//
// # Ordering and concurrency
//
// Every method but sendMessage is handled in the order frames arrive,
// before the next frame is read, so a subscribe is in place for the
// sendMessage sent after it. Batches run on their own goroutine, their
// elements concurrently. sendMessage requests run concurrently (up to 64
// per connection, then the server stops reading that connection): a peer
// that needs its messages ordered waits for each answer, as Client does.
// A connection with no subscriptions cannot be called back, so its
// sendMessage requests are answered in order on the read loop instead.
// Writes to a peer are not timed; a peer that stops reading stalls only its
// own connection (deliveries to it are bounded by the subscriber timeout).
// sendMessage notifications are handled one at a time in arrival order.
// Deliveries to one subscription follow the bus's ordering guarantees.
//
// # Default handler
//
// With Options.AgentCommand set, a sendMessage that reaches no subscriber
// (and is not a duplicate, not on an append-only topic and not on a
// system: topic) starts the command with WEAVE_WORKSPACE,
// WEAVE_DEFAULT_TOPIC (the topic), WEAVE_AGENT_ID, WEAVE_BUS_URL (and the
// same under BUB_, plus WEAVE_BUS_TOKEN when a token is set), waits up to
// Options.AgentStartTimeout for a subscription matching the topic, then
// walks again. Concurrent messages on one topic share one start. The
// agent gets the explicit environment of a plugin (PATH, HOME, USER,
// locale, TMPDIR, non-secret WEAVE_*; see internal/proc), Options.AgentEnv
// and the variables above, never the host's secrets; it runs in
// Options.Workspace, is killed by Server.Close, and on Linux dies with the
// server's process.
//
// # Security
//
// A server that is not loopback-only needs Options.Token; clients send
// "Authorization: Bearer <token>" (401 otherwise), checked by
// guard.Authorized, the one bearer check every face shares. Browser origins
// other than the server's own host are refused unless listed in
// Options.OriginPatterns; Serve applies the HTTP policy of every face
// (guard.Harden), and bus/serve serves this face with the others.
//
// On loopback a peer without the token joins as a guest. Guests hold at
// most Options.MaxGuestConnections connections together
// (bus.max_guest_connections, half of bus.max_connections unless set), so
// token holders always find room; past it a guest's handshake is answered
// 503 naming the limit. It cannot hold a
// subscription whose pattern can match a protected topic, whatever its
// spelling (bus.PatternMayMatchProtected), nor send on one. Guests share
// what all peers share: together they hold at most half of
// bus.max_total_subscriptions (Options.MaxGuestSubscriptions); one guest
// connection sends on at most a tenth of bus.max_topics new retained and
// append-only topics, and all guests on a quarter over the server's life
// (Options.MaxGuestTopicsPerConnection, Options.MaxGuestTopics). Past a
// share, and past the bus's own caps (bus.ErrLimit), a call answers
// CodeLimit with a message that names the limit.
//
// # Client
//
// Dial connects, initializes and keeps the connection: after a loss it
// reconnects with backoff, initializes with the same clientId and
// subscribes again in the original order. Calls made meanwhile wait for
// the new connection (bounded by their context); a call whose connection
// dropped before the answer fails, since it may or may not have run.
//
// A call reads its own answer from the socket when no other goroutine is
// reading, and no goroutine reads for a client that has neither calls in
// flight nor subscriptions for the first couple of milliseconds it is
// idle: an answer is not handed from a reader goroutine to the caller,
// which on a quiet machine costs about as much as the server's work. The
// client frames its messages itself (github.com/gobwas/ws for the
// handshake and the frame headers) because a read given up when its
// context ends must keep the connection and any half-read frame; the
// server's library closes the connection then. The client dials the bus
// directly: HTTP_PROXY and HTTPS_PROXY are not used.
package jsonrpc
