// Package busface is the host on the bus: opening the bus the host uses
// (Open, with its URL, token and options from config), bus peers as hooks
// (Hooks), delegation and the agents served over the bus (Delegator,
// ServeAgents), and the loop status read from a bus (LoopStatus).
//
// A bus peer in any language can act as a hook or as an
// agent, because hook dispatch and delegation are bus requests:
//
// Hooks. For each hook event the pipeline holds one entry, "bus.<event>"
// (source bus, priority HookPriority, failure policy open), which sends a
// Request on "hook:<event>" (e.g. hook:tool.execute.before) with the event
// as payload:
//
//	{"type": "hook.event", "name": "tool.execute.before", "session_id": "...",
//	 "agent": "tapestry", "cwd": "/project", "tool": "bash",
//	 "args": {"command": "ls"}, "time": "..."}
//
// (every field of plugins.Event, plus type). The bus walks the peers
// subscribed to the topic, newest first, as its policies say; their acks are
// read in walk order. Each ack's result object decides:
//
//	{"action": "block", "reason": "no rm -rf"}   blocks (set stopPropagation
//	                                            too, so later peers are not asked)
//	{"action": "modify", "args": {...}}          replaces the tool arguments
//	{"action": "modify", "text": "..."}          replaces the chat message text
//	{"context": "..."}                           adds context, with any action
//
// A block wins over everything; of several modifications the last one in
// walk order counts; contexts are joined. No subscriber, or acks with no
// result, allow. The result is read from the ack's "result" field (on the
// JSON-RPC face, the result object of the peer's sendMessage answer); a peer
// that sets only "message" may put the same JSON object there. A peer that failed (timed out,
// disconnected) is passed over; when every peer failed, the hook fails and
// its policy (open) allows.
//
// Agents. Delegation (the task tool) through Delegator sends a Request on
// "agent:<name>" with
//
//	{"type": "agent.request", "prompt": "...", "from": ["loom"]}
//
// where from is the delegation chain of the caller. The first processed ack
// answers: result {"output": "...", "error": "..."}, or a message holding
// that object or the output as plain text.
// ServeAgents subscribes the built-in agents to their topics, so
// delegation reaches them through the bus, and so does any outside peer.
//
// # Guarantees
//
//   - Open returns the bus and the one func that closes it; the embedded
//     memory bus lives only as long as the process that opened it.
//   - A token read from the local token file (guard.TokenPath) is sent
//     only to a bus on this machine (a loopback URL), never elsewhere.
//   - A bus hook never turns a failing peer into a decision: a peer that
//     fails is passed over, and when every peer fails the hook fails and its
//     policy (open) allows.
//   - The capability ceiling holds through the bus: an agent served by
//     ServeAgents works as the delegate of the last agent of the request's
//     "from" chain, never with more than its own row.
//   - busface never imports the host root: the host composes it, not the
//     other way round.
package busface
