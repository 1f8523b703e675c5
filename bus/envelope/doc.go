// Package envelope is the bus's v1 envelope face: newline-delimited JSON
// envelopes over a Unix socket, the same commands over HTTP, and the
// runtime rules that go with them (relay output, receivers, the loop guard).
// The wire, with examples of every command, the error codes, the guarantees
// and the Settled list of choices where the seed documents and real clients
// (codex-weave) disagree, is docs/weave-protocol.md in the repository.
//
// # Usage
//
// A Broker is a face over a bus.Bus; the transports are thin:
//
//	b, err := envelope.Open(ctx, theBus, envelope.Options{})
//	go b.ServeUnix(ctx, socketPath) // envelope.DefaultSocketPath(), say
//	http.ListenAndServe("127.0.0.1:7777", b.Handler())
//
// NewBroker makes one on a memory bus of its own. Broker.Handle runs an
// envelope without a transport. Dial returns a Go client for the socket.
//
// # State on the bus
//
// Sessions, agents and events live on the bus: each session's events are
// the append-only topic session:<id> (an event's seq is its offset there),
// sessions are listed on the append-only session-index, and the retained
// topics session-info:<id> and session-agents:<id> hold each session's
// info and agents (AppendOnlyTopics, RetainedTopics; bus.DefaultOptions
// has them). A broker keeps a view built by applying those events in
// offset order: its own when it writes them, others' when the bus tells it
// of them (an observer subscription, outside last match wins) or before it
// runs a command. So brokers on one bus (two `weave bus serve` on one NATS)
// serve the same sessions, and a client may reconnect to any of them.
// Connections, streams and idempotency keys are a broker's own.
//
// # Envelopes
//
// Every frame carries v (1), type, id (a UUID), ts (UTC, milliseconds, Z)
// and src; dst, session, seq, idempotency_key, corr, payload, status and
// error are omitted when empty. The bus accepts a frame without ts but not a
// malformed one. A reply has the request's type, src "bus", corr set to the
// request's id, and status "ok" ("duplicate" for a suppressed repeat). It is
// a success unless status is "error"; then error holds a string code
// (invalid_json, invalid_request, unknown_type, not_found, forbidden,
// conflict, too_large) and a message saying what to do. A malformed or
// oversize line gets an error reply and the connection stays open.
//
// Commands: session.create, session.list (open sessions; payload.all for
// all), session.close; agent.add, agent.remove (quiet after session.close),
// agent.list, agent.update; message.created; action.submit, action.result;
// relay.submit (answered with a relay.accepted payload), relay.done;
// task.updated, task.done; events.history, events.stream. Besides the
// events clients send, the bus records session.created, session.closed,
// agent.added, agent.removed and agent.updated, its own action.result
// events (src "bus") for actions it rejects or abandons, and relay.done
// (src "bus", dst the relay's owner) when the owner ends a relay (a
// relay.submit carrying done, or relay.done); a relay whose actions all
// finished stays open for the owner's next turn. A relay takes one relay.submit per turn under its relay_id;
// a wait action in it is reported in relay.accepted's targets map and
// delivered to no one.
//
// events.stream with follow acknowledges and then pushes events.record
// frames (corr = the request id, the event in payload): only new events, or
// first the retained ones after payload.after when it is set. The SSE
// stream (GET /v1/sessions/{id}/events) works the same way with
// Last-Event-ID or ?after=N; event ids there are seqs. payload.agent (SSE:
// ?agent=ID) keeps only the events routed to that agent, the same ones its
// socket connection would be pushed.
//
// # Guarantees
//
//   - Order. Each session's events get a seq (1, 2, ...), their offset on
//     the session's topic, and every consumer of every broker sees them in
//     that order: a broker applies and fans out events strictly by offset,
//     under one lock, and each connection has one writer. Actions reach
//     each target in submission order.
//   - Routing. An event with dst goes to that agent's connections; one
//     without dst goes to every agent of the session but its src. Streams
//     (events.stream, SSE) see every event of the session. Both faces read the
//     same log, so they see the same events.
//   - Actions. action.submit is validated whole before anything is delivered;
//     an action to a target the session lacks fails the whole submit. The bus
//     splits a submit into one action.submit event per target. Results must
//     come from the action's target; completed, rejected and error are
//     terminal and nothing is accepted after them. Unfinished actions end with
//     an error result from the bus when their target is removed or the session
//     closes. When an agent joins with agent.add on a connection, the actions
//     addressed to it that have no result yet are pushed to that connection
//     again, in order (at least once: a rejoining agent dedupes by
//     action_id).
//   - Ownership. The first action.submit in a conversation (payload.context
//     .context_id) fixes its owner (context.owner_id, else src); afterwards
//     only the owner relays in it, while anyone may answer with replies.
//     relay.submit records its sender as the owner. A reply to a relayed
//     action carries that action's relay_id and plan_step_id.
//   - Loop guard. A reply to an action that was itself a reply is rejected
//     (action.result "rejected") rather than delivered; MayRelay gives the
//     runtime the same kind-based rule.
//   - Duplicates. A command repeated with the same idempotency_key (for
//     action.submit, the group_id when no key is set; for relay.submit, the
//     same envelope id) gets the first reply again with status "duplicate"
//     and changes nothing.
//   - seq on requests. A connection's seq values must increase; a stale one is
//     refused.
//
// # Slow consumers and limits
//
// Pushes never block the broker. Each connection and stream has a bounded
// queue (Options.QueueLen); a consumer that falls that far behind is
// disconnected and resumes from its last seq (events.stream "after", SSE
// Last-Event-ID). Memory is bounded: each session's log keeps the bus's
// max_log_messages events, and a broker remembers Options.IdempotencyWindow
// finished actions and idempotency keys per session; Options.KeepClosed
// closed sessions stay readable, and older ones' topics are dropped from
// the bus when it can forget topics (memory and nats can). Lines and HTTP bodies are capped at
// Options.MaxFrameBytes. Open sessions are capped at Options.MaxSessions,
// and those one socket connection created at
// Options.MaxSessionsPerConnection (half); a command the bus refuses for
// its own caps (bus.ErrLimit: bus.max_topics, bus.max_store_bytes) answers
// "limit" (HTTP 429) with the bus's message, which names the key. State is as durable as the bus: in memory for the
// life of the process on the memory backend, in JetStream on nats.
//
// The socket is the access control (mode 0600, owner only). The HTTP face
// asks for the bus token (Options.Token) on every command but the reads
// (ReadOnly), through guard.Authorized, the one bearer check every face
// shares; without a token it trusts every client: serve it on a loopback
// address, with a token, behind guard.Harden, as bus/serve does.
package envelope
