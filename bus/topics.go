package bus

import (
	"fmt"
	"strings"
)

// TopicKeep is how the bus keeps the messages of a topic by default.
type TopicKeep string

const (
	// KeepNone delivers a message and keeps nothing.
	KeepNone TopicKeep = "plain"
	// KeepLast is a retained topic: the last message is kept and can be
	// read back (Retained).
	KeepLast TopicKeep = "retained"
	// KeepAll is an append-only topic: every message is kept in a log with
	// an offset and can be replayed (Replay).
	KeepAll TopicKeep = "append-only"
)

// Owners of the topics in the table, in the order it lists them.
const (
	OwnerLoop    = "loop"
	OwnerSession = "session"
	OwnerModel   = "model events"
	OwnerAgents  = "agents"
	OwnerHooks   = "hooks"
	OwnerSystem  = "system"
	OwnerCollab  = "collab"
)

// Topic is one row of the topic table: a family of topics, who publishes
// on it, and how the bus treats it by default.
type Topic struct {
	// Pattern names the topics of the row (a bus pattern: "loop:current",
	// "session:*").
	Pattern string
	// Owner is the part of Weave that defines the topics (OwnerLoop, ...).
	Owner string
	// Keep is the default policy: plain, retained or append-only.
	Keep TopicKeep
	// Protected topics change what a run does: a face with a token lets
	// only peers that sent it subscribe to them or send on them.
	Protected bool
	// Launch says the default handler (bus.agent_command) may start an
	// agent for a message on these topics that finds no subscriber. Host
	// topics (hooks, loop and model events) and the bus's own never do: a
	// message nobody takes there is not work for an agent.
	Launch bool
	// Doc says what the topics carry.
	Doc string
}

// topics is the table, owner by owner. A more specific row comes before a
// catch-all of the same owner (loop:current before loop:*): TopicOf takes
// the first row that matches.
var topics = [...]Topic{
	{Pattern: "loop:current", Owner: OwnerLoop, Keep: KeepLast, Doc: "the run's latest STATE, DONE or ABORT event (bus/loop)"},
	{Pattern: "loop:anchor", Owner: OwnerLoop, Keep: KeepAll, Doc: "ANCHOR recovery snapshots"},
	{Pattern: "loop:trace", Owner: OwnerLoop, Keep: KeepAll, Doc: "trace events (planned, not yet written)"},
	{Pattern: "loop:*", Owner: OwnerLoop, Keep: KeepNone, Doc: "any other loop topic"},
	{Pattern: "issue:*", Owner: OwnerLoop, Keep: KeepAll, Launch: true, Doc: "per-issue discussion (`issue:<id>`)"},
	{Pattern: "project:*", Owner: OwnerLoop, Keep: KeepAll, Launch: true, Doc: "project announcements (`project:<name>`)"},
	{Pattern: "session:*", Owner: OwnerSession, Keep: KeepAll, Launch: true, Doc: "a v1 session's events, and only those (`session:<id>`; an event's seq is its offset)"},
	{Pattern: "session-index", Owner: OwnerSession, Keep: KeepAll, Launch: true, Doc: "the v1 sessions created and closed"},
	{Pattern: "session-info:*", Owner: OwnerSession, Keep: KeepLast, Launch: true, Doc: "a v1 session's info (`session-info:<id>`)"},
	{Pattern: "session-agents:*", Owner: OwnerSession, Keep: KeepLast, Launch: true, Doc: "a v1 session's agents (`session-agents:<id>`)"},
	{Pattern: "model:*", Owner: OwnerModel, Keep: KeepNone, Doc: "the host's streamed model events of a session (`model:<session-id>`); not kept"},
	{Pattern: "agent:*", Owner: OwnerAgents, Keep: KeepNone, Protected: true, Launch: true, Doc: "requests to an agent, delegation included (`agent:<name>`)"},
	{Pattern: "hook:*", Owner: OwnerHooks, Keep: KeepNone, Protected: true, Doc: "hook requests of the host; peers answer with a decision (`hook:<event>`)"},
	{Pattern: "ask:*", Owner: OwnerHooks, Keep: KeepNone, Protected: true, Doc: "permission questions of a session's tool calls (`ask:<session>`, `weave chat --ask-via bus`); a peer answers allow or deny"},
	{Pattern: "system:*", Owner: OwnerSystem, Keep: KeepNone, Protected: true, Doc: "the bus's own announcements, such as `system:dead-letter`"},
	{Pattern: "thread.*.broadcast", Owner: OwnerCollab, Keep: KeepNone, Launch: true, Doc: "a thread's broadcast; reaches every participant (`thread.<id>.broadcast`)"},
	{Pattern: "thread.*.reply", Owner: OwnerCollab, Keep: KeepNone, Launch: true, Doc: "replies in a thread (`thread.<id>.reply`)"},
	{Pattern: "agent.*.replies", Owner: OwnerCollab, Keep: KeepNone, Launch: true, Doc: "an agent's private mailbox (`agent.<id>.replies`)"},
}

// ModelTopic is the topic of a session's streamed model events,
// model:<session-id>: plain, so a delta is delivered to whoever listens and
// kept nowhere, and session:<id> keeps only the v1 session's own events.
func ModelTopic(sessionID string) string { return "model:" + sessionID }

// Topics returns the topic table, owner by owner. Topics not in it are
// plain, open to every peer, and may start an agent.
func Topics() []Topic { return append([]Topic(nil), topics[:]...) }

// TopicOf returns the table's row for topic: the first whose pattern
// matches it.
func TopicOf(topic string) (Topic, bool) {
	for _, t := range topics {
		if Match(t.Pattern, topic) {
			return t, true
		}
	}
	return Topic{}, false
}

// TopicPatterns returns the patterns of the rows kept as keep, in table
// order: the defaults of Options.Retained and Options.AppendOnly.
func TopicPatterns(keep TopicKeep) []string {
	var out []string
	for _, t := range topics {
		if t.Keep == keep {
			out = append(out, t.Pattern)
		}
	}
	return out
}

// ProtectedPrefixes returns the prefixes of the protected topics ("hook:",
// "agent:", "system:"): a face with a token lets only peers that sent it
// use topics under them.
func ProtectedPrefixes() []string {
	var out []string
	for _, t := range topics {
		if t.Protected {
			out = append(out, rowPrefix(t))
		}
	}
	return out
}

// ProtectedTopic reports whether topic is one only token holders may use.
func ProtectedTopic(topic string) bool {
	for _, p := range ProtectedPrefixes() {
		if strings.HasPrefix(topic, p) {
			return true
		}
	}
	return false
}

// PatternMayMatchProtected reports whether a subscription to pattern may
// receive messages on a protected topic (ProtectedTopic), so that only token
// holders may hold it. It is decided by what the pattern can match under
// Match, not by how it is spelled: \hook:*, h\ook:*, [h]ook:*, ?ook:* and
// * all reach hook:... and are protected; inbound:* is not.
// It fails closed: an invalid pattern, or one it cannot prove keeps off every
// protected topic, is protected.
func PatternMayMatchProtected(pattern string) bool {
	p, err := compilePattern(pattern)
	if err != nil {
		return true
	}
	for _, prefix := range ProtectedPrefixes() {
		if p.mayMatchPrefixed(prefix) {
			return true
		}
	}
	return false
}

// NoLaunchPrefixes returns the prefixes of the topics the default handler
// never starts an agent on ("loop:", "model:", "hook:", "system:"), in
// table order.
func NoLaunchPrefixes() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range topics {
		if t.Launch {
			continue
		}
		p := rowPrefix(t)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// MayLaunch reports whether the default handler may start an agent for a
// message on topic that found no subscriber.
func MayLaunch(topic string) bool {
	for _, p := range NoLaunchPrefixes() {
		if strings.HasPrefix(topic, p) {
			return false
		}
	}
	return true
}

// rowPrefix is the literal head of a row's pattern, up to its first
// wildcard: "hook:*" is "hook:", "loop:current" is "loop:".
func rowPrefix(t Topic) string {
	if i := strings.IndexAny(t.Pattern, "*?["); i >= 0 {
		return t.Pattern[:i]
	}
	if i := strings.IndexByte(t.Pattern, ':'); i >= 0 {
		return t.Pattern[:i+1]
	}
	return t.Pattern
}

// TopicsMarkdown renders the table for the protocol docs: one row per
// family, owner by owner.
func TopicsMarkdown() string {
	var b strings.Builder
	b.WriteString("| topics | owner | kept | token | starts an agent | carries |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	yes := map[bool]string{true: "yes", false: "no"}
	for _, t := range topics {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", t.Pattern, t.Owner, t.Keep, yes[t.Protected], yes[t.Launch], t.Doc)
	}
	return b.String()
}
