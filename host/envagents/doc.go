// Package envagents puts Weave's own agents (Loom, Tapestry, Thread, Weft...)
// into v1 envelope sessions, so a codex-weave client talks to them as it
// talks to any envelope agent.
//
// Join connects one role to one session over the bus socket: it adds itself
// with agent.add (id and name: the role's name, lower case), and from then on
// every action.submit addressed to it is carried out:
//
//   - a message action (kind user, or a reply) is a turn of the role's
//     conversation: the action gets an "accepted" result, the agent's
//     answer goes back to the sender as a reply action (reply_to_action_id
//     set, the conversation's context kept), then a "completed" result; an
//     agent that fails answers "error" with what went wrong;
//   - control "interrupt" cancels the turn in progress (its action ends
//     "error", interrupted); "new" starts a fresh conversation, a new Weave
//     session, whose id the result carries in data.new_context_id;
//   - "compact" compacts the conversation (Host.Compact); "review" has Weft
//     review it (its args are Weft's instructions) and replies with Weft's
//     answer.
//
// Conversations are kept per context_id (per sender without one), each its
// own Weave session, so two owners never share one; at most MaxConversations
// of them. Who may send follow-ups
// is the bus's rule (envelope.Broker: only a conversation's owner sends
// non-reply actions in it); a reply from anyone is taken as a turn, because
// replies are how other agents answer.
//
// Guarantees: one turn at a time per conversation, in the order the bus
// delivered them; every action addressed to the agent ends with a terminal
// result; nothing outlives ctx (Join returns when ctx ends or the
// connection closes).
package envagents
