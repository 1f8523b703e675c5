package bus_test

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/collab"
	"github.com/weavehq/weave/bus/envelope"
	"github.com/weavehq/weave/bus/loop"
)

var update = flag.Bool("update", false, "rewrite the topic section of docs/bus-jsonrpc.md from the table")

const (
	topicDocs  = "../docs/bus-jsonrpc.md"
	topicBegin = "<!-- begin topics: generated from bus/topics.go -->\n"
	topicEnd   = "<!-- end topics -->"
)

// TestTopicDocs fails when the topic section of the protocol docs is not
// the table; -update rewrites it.
func TestTopicDocs(t *testing.T) {
	raw, err := os.ReadFile(topicDocs)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, topicBegin)
	j := strings.Index(doc, topicEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no section between %q and %q", topicDocs, topicBegin, topicEnd)
	}
	got, want := doc[i+len(topicBegin):j], bus.TopicsMarkdown()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(topicDocs, []byte(doc[:i+len(topicBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the topic section of %s disagrees with bus/topics.go (go test ./bus -run TestTopicDocs -update rewrites it) (-want +got):\n%s", topicDocs, cmp.Diff(want, got))
}

// TestTopicTableCopies ties the topic names other packages spell to the
// table's rows, and the bus defaults to its policies.
func TestTopicTableCopies(t *testing.T) {
	for _, tt := range []struct {
		topic string
		owner string
		keep  bus.TopicKeep
	}{
		{loop.TopicCurrent, bus.OwnerLoop, bus.KeepLast},
		{loop.TopicAnchor, bus.OwnerLoop, bus.KeepAll},
		{loop.TopicTrace, bus.OwnerLoop, bus.KeepAll},
		{envelope.EventsTopicPrefix + "ses_1", bus.OwnerSession, bus.KeepAll},
		{envelope.IndexTopic, bus.OwnerSession, bus.KeepAll},
		{envelope.SessionInfoTopicPrefix + "ses_1", bus.OwnerSession, bus.KeepLast},
		{envelope.AgentsTopicPrefix + "ses_1", bus.OwnerSession, bus.KeepLast},
		{bus.ModelTopic("ses_1"), bus.OwnerModel, bus.KeepNone},
		{"agent:tapestry", bus.OwnerAgents, bus.KeepNone},
		{"hook:tool.execute.before", bus.OwnerHooks, bus.KeepNone},
		{bus.DeadLetterTopic, bus.OwnerSystem, bus.KeepNone},
		{collab.BroadcastTopic("t1"), bus.OwnerCollab, bus.KeepNone},
		{collab.ReplyTopic("t1"), bus.OwnerCollab, bus.KeepNone},
		{collab.AgentReplyTopic("w-1"), bus.OwnerCollab, bus.KeepNone},
	} {
		row, ok := bus.TopicOf(tt.topic)
		if !ok || row.Owner != tt.owner || row.Keep != tt.keep {
			t.Errorf("TopicOf(%q) = %+v, %v; want owner %q, kept %s", tt.topic, row, ok, tt.owner, tt.keep)
		}
	}
	o := bus.DefaultOptions()
	for _, row := range bus.Topics() {
		if got := slices.Contains(o.Retained, row.Pattern); got != (row.Keep == bus.KeepLast) {
			t.Errorf("DefaultOptions().Retained holds %q: %v; the table keeps it %s", row.Pattern, got, row.Keep)
		}
		if got := slices.Contains(o.AppendOnly, row.Pattern); got != (row.Keep == bus.KeepAll) {
			t.Errorf("DefaultOptions().AppendOnly holds %q: %v; the table keeps it %s", row.Pattern, got, row.Keep)
		}
	}
	// The model events of a session are not the session's: session:*
	// holds only the v1 session's own events.
	if row, _ := bus.TopicOf("model:ses_1"); row.Keep != bus.KeepNone || row.Launch {
		t.Errorf("model:<session-id> = %+v, want plain and never starting an agent", row)
	}
}

func TestTopicPrefixes(t *testing.T) {
	if diff := cmp.Diff([]string{"agent:", "hook:", "ask:", "system:"}, bus.ProtectedPrefixes()); diff != "" {
		t.Errorf("ProtectedPrefixes() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"loop:", "model:", "hook:", "ask:", "system:"}, bus.NoLaunchPrefixes()); diff != "" {
		t.Errorf("NoLaunchPrefixes() (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		topic              string
		protected, launchs bool
	}{
		{"hook:tool.execute.before", true, false},
		{"agent:new", true, true},
		{"system:dead-letter", true, false},
		{"loop:current", false, false},
		{"loop:other", false, false},
		{"model:ses_1", false, false},
		{"session:ses_1", false, true},
		{"inbound:chat-1", false, true},
		{"agent.w-1.replies", false, true},
	} {
		if got := bus.ProtectedTopic(tt.topic); got != tt.protected {
			t.Errorf("ProtectedTopic(%q) = %v, want %v", tt.topic, got, tt.protected)
		}
		if got := bus.MayLaunch(tt.topic); got != tt.launchs {
			t.Errorf("MayLaunch(%q) = %v, want %v", tt.topic, got, tt.launchs)
		}
	}
}
