// Package natsbus is the bus backend on NATS (github.com/nats-io/nats.go),
// for buses that span processes or machines. It passes the same
// conformance suite as bus.NewMemory (bustest.Run).
//
// # Where delivery happens
//
// Subscriptions live in the process that made them: each Bus keeps a
// bus.Memory for its own subscribers, so matching, last-match-wins,
// policies, per-subscriber queues and timeouts, retries and dead letters
// behave in one process exactly as bus.Memory documents. NATS joins the
// processes:
//
//   - Publish delivers to local subscriptions, then publishes the message on
//     weave.pub.<class>.<topic> on core NATS; every other Bus on the server delivers
//     it to its own subscriptions. Messages from one publisher reach each
//     subscription in publish order (one NATS connection keeps order).
//     Delivery to other processes is at most once: a process that is
//     disconnected at that moment misses it, unless the topic is retained or
//     append-only, where it can be read back.
//   - Request walks the local subscriptions newest first. Unless a policy
//     stopped the walk, it goes on to every other process that has a
//     matching subscription, the process holding the newest such
//     subscription first; that process walks its own list and sends back its
//     acks. Which process has what is read from the JetStream key-value
//     bucket WEAVE_SUBS, written by Subscribe and Unsubscribe and watched by
//     every Bus; a subscription becomes visible to other processes once its
//     entry has reached them (one round trip, usually). Across processes the
//     order is per process, not one interleaved list: a newer identical
//     pattern in process B does not supersede an older one in process A.
//     A process that died without Close is skipped (NATS answers "no
//     responders") and its entries are removed; a process that was only
//     cut off writes its entries again when it reconnects.
//
// # What JetStream keeps
//
//   - Retained topics: stream WEAVE_RETAINED with one message per subject
//     (MaxMsgsPerSubject 1); Retained reads the last one.
//   - Append-only topics: one stream per topic (WEAVE_LOG_ and a hash of the
//     topic), so the offset of a message is its stream sequence, from 1.
//     Each stream keeps Options.MaxLogMessages messages (MaxMsgs, discarding
//     the oldest).
//   - Dead letters: bucket WEAVE_DLQ, one key per dead letter, shared by all
//     processes; DeadLetters lists them with the local ones, and
//     ReplayDeadLetter re-sends one stored by another process to its topic.
//     The bucket's stream keeps Options.MaxDeadLetters entries, discarding
//     the oldest, and DeadLetters returns the newest that many.
//
// Retained and append-only messages are stored before delivery. The store is
// retried through disconnects (until the caller's context or
// Options.RequestTimeout ends) with the same Nats-Msg-Id, so a NATS server
// restart neither loses nor duplicates a durable publish.
//
// # Idempotency
//
// For retained and append-only topics the idempotency key, scoped to the
// topic, is the JetStream Nats-Msg-Id, and the streams' duplicate window is
// Options.IdempotencyWindow: duplicates are caught across processes and
// restarts. For other topics duplicates are caught within the process, as
// bus.Memory does.
//
// # Subjects
//
// Topics hold characters NATS subjects treat specially ('.', '*', '>',
// spaces), so each topic is one subject token made by EncodeTopic:
// letters, digits, '-' and '_' stay, every other byte becomes '=' and two hex
// digits ("agent:w-1" is "agent=3Aw-1"). DecodeTopic reverses it.
//
// Before the topic comes its class: "agent", "hook" or "system" for the
// protected topics (bus.ProtectedPrefixes), "open" for every other. A
// publish goes on weave.pub.<class>.<topic>, a forwarded request on
// weave.req.<class>.<instance>, so that NATS permissions can grant the
// protected classes apart (docs/bus-nats.md has a least-privilege
// configuration).
//
// # Who may do what
//
// On NATS the right to a topic is the right to its subjects, which the
// server checks against the permissions of the user the connection
// authenticated as. A Bus takes a forwarded publish or request only when
// the message's topic is the one its subject names: a client allowed the
// open subjects cannot slip agent:x inside one. No header of a message
// (weave-client-id included) grants anything: any client allowed to publish
// can write them.
//
// # Credentials
//
// WithAuth gives New a creds file, an nkey seed file, a user and password
// or a token, and TLS (a CA, a client certificate, a server name). A URL
// may still carry user info (nats://user:pass@host); every error, and
// Redact for callers, shows it as ***.
package natsbus
