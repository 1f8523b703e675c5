// Package chat is the model door: every model call of the host passes it,
// and the walk of one call stays inside it. Door.Complete (an agent's
// plugins.Host.Complete, handed to the tools as Door.ModelFunc) runs in
// four phases, as tools.Tools runs a tool call:
//
//   - before: the context hooks left for the session's next call is taken,
//     and chat.message fires on the newest message when it is the user's
//     (source: the person, or the agent that delegated). A hook may modify
//     the text, block the call (Complete fails, the provider is not
//     called) or add context, which reaches the model as a
//     <system-reminder> beside the newest message, for this call only.
//   - thread: the agent's conversation in the session, and the thread of
//     the call's message list in it, are found; a compaction due is run.
//   - call: the model the call names answers (an entry of models, or a
//     model name at the model section's provider; model.Set), its text
//     deltas and tool-call starts streamed as they arrive. A model that
//     fails in a way another may not (model.FallbackReason) hands the call
//     to the next of the agent's fallback chain (fallback.go), the whole
//     conversation converted to that model's wire, and the conversation
//     stays there.
//   - after: the conversation, the transcript, model.usage, then
//     chat.message on the answer (source "assistant", with tokens_used and
//     context_window); the context those hooks add goes with the session's
//     next call.
//
// # Events
//
// Each Event goes first to the observers (Door.Observe), in the goroutine
// of the model call, which waits for them, then to the bus on
// bus.ModelTopic(session), model:<session>, when there is a bus and a
// session. That topic is neither retained nor append-only: the bus keeps
// no log of the deltas, and the envelope faces' session:<id> log never
// holds them. A failed publish is logged, never fails the call. Within
// one call an observer sees model.delta and model.tool_call in the order
// the provider streamed them, then model.usage. A stream cut before its
// finish event is asked again (host/model): model.retry says so, and the
// text streamed before it is void; the transcript keeps only the answer
// that finished. An answer past its bounds (model.max_tokens, a byte cap)
// fails the call. A call that moves to the next model of its fallback
// chain streams model.fallback (from, to, why; the text streamed before it
// is void) and writes a fallback line to the transcript. A compaction streams
// model.compacting before the summary is written and model.compacted
// after it is applied and on file. tool.start and tool.result come from
// the tools (Door.WatchTool) as a tool call starts and ends.
//
// # Transcript
//
// Each session's transcript is .weave/sessions/<id>.jsonl (mode 0600),
// append-only, one SessionLine a line, every agent of the session writing
// to it. After an answer: the request's messages not yet on file, the
// answer and a usage line (each naming the model that answered). A switch
// to a fallback: a fallback line. A call the person cut off: its messages and
// what the model wrote by then, marked [interrupted], so the turn can
// resume. A compaction: a compaction line with the summary (the messages
// it replaces stay above it). A delegation: the child's first line names
// its parent, and the task's result in the parent names the child. A
// reviewer's verdict: a review line. A call that failed otherwise writes
// nothing. The transcript holds the messages the agent sent and the
// model's answers, never the system prompt, the tool specs, the reminders
// hooks added, the API key or the environment. ReadSession, Sessions,
// LatestSession and SessionTokens read transcripts back, skipping a torn
// last line. Writer and readers share one limit on a line (16 MiB): a line
// that would be longer has its long texts cut, start and end kept with a
// note saying how much was cut, so every line written is read back.
//
// # Money
//
// Each answer is priced (cost.go) from its usage and the price table
// (config's prices: over the defaults of package price): model.usage
// carries CostUSD and the transcript's usage line cost_usd, both absent
// when the model has no known price, which readers show as unknown, never
// as zero (Cost). With Options.Budget every provider call, compactions
// included, is first checked against the budgets with its worst case (its
// input and its whole max_tokens, 8192 when nothing bounds it): a call
// that could cross one fails with a *budget.Error before any request is
// sent, and each answer is charged to the ledger.
//
// # Compaction
//
// When an agent's conversation nears the window, the model summarises its
// earlier part and the summary is sent in its place from then on (the
// agent keeps its whole list; the door remembers which prefix the summary
// replaces and checks on each call that the list still starts with it). A
// compaction happens:
//   - before the next call, after an answer whose tokens reach the
//     compact ratio (context_window.compact_ratio) of the window;
//   - when the provider answers that the chat is too long: once, then the
//     call is tried once more;
//   - on request (Door.Compact, the chat's /compact): at once between
//     calls, else before the agent's next model call.
//
// Each fires session.compacting (hooks may block it or add instructions)
// and session.compacted, writes its transcript line, publishes an ANCHOR
// on loop:anchor when there is a bus (the active plan's task when one is
// open; see Options.Plans), and streams model.compacted. A compaction that
// fails leaves the call as it was and says why in the log.
//
// # Concurrency
//
// A Door is safe for concurrent use. There is one conversation per
// (session, agent); its calls may run at once (parallel delegations to one
// role, up to four message lists followed), and its compactions are
// serialised by its own lock, taken for the whole compaction and given up
// when the call's ctx ends. Door.History waits until no call of the
// conversation is in flight, so the next turn starts from what the last
// one recorded.
//
// Imports point down: chat uses host/model, host/tools and host/run (the
// ANCHOR), and nothing of host, which builds a Door with New from explicit
// Options.
package chat
