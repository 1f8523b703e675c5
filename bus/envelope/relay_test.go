package envelope

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRelayOutput(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    RelayOutput
		wantErr string
	}{
		{
			name: "message with plan",
			in:   `{"type":"relay_actions","actions":[{"type":"message","dst":"worker","text":"do x","plan":{"steps":["a","b"],"note":"n"}}]}`,
			want: RelayOutput{Kind: OutputRelayActions, Actions: []RelayAction{
				{Type: "message", Dst: "worker", Text: "do x", Plan: &Plan{Steps: []string{"a", "b"}, Note: "n"}}}},
		},
		{
			name: "control",
			in:   `{"type":"relay_actions","actions":[{"type":"control","dst":"worker","command":"new"}]}`,
			want: RelayOutput{Kind: OutputRelayActions, Actions: []RelayAction{{Type: "control", Dst: "worker", Command: "new"}}},
		},
		{
			name: "review with args, then a message, two targets",
			in:   "  \n" + `{"type":"relay_actions","actions":[{"type":"control","dst":"a","command":"review","args":"focus on tests"},{"type":"message","dst":"b","text":"hi"}]}` + "\n",
			want: RelayOutput{Kind: OutputRelayActions, Actions: []RelayAction{
				{Type: "control", Dst: "a", Command: "review", Args: "focus on tests"},
				{Type: "message", Dst: "b", Text: "hi"}}},
		},
		{name: "task done", in: `{"type":"task_done","summary":"all merged"}`, want: RelayOutput{Kind: OutputTaskDone, Summary: "all merged"}},
		{name: "task done without summary", in: `{"type":"task_done"}`, want: RelayOutput{Kind: OutputTaskDone}},
		{name: "prose is local", in: "Sure, here is the answer.", want: RelayOutput{Kind: OutputLocal, Text: "Sure, here is the answer."}},
		{name: "empty is local", in: "", want: RelayOutput{Kind: OutputLocal}},
		{name: "broken JSON is local", in: `{"type":"relay_actions",`, want: RelayOutput{Kind: OutputLocal, Text: `{"type":"relay_actions",`}},
		{name: "fenced JSON is local", in: "```json\n{\"type\":\"task_done\"}\n```", want: RelayOutput{Kind: OutputLocal, Text: "```json\n{\"type\":\"task_done\"}\n```"}},
		{name: "JSON array is local", in: `[1,2]`, want: RelayOutput{Kind: OutputLocal, Text: `[1,2]`}},
		{name: "empty actions", in: `{"type":"relay_actions","actions":[]}`, wantErr: "non-empty actions"},
		{name: "missing actions", in: `{"type":"relay_actions"}`, wantErr: "non-empty actions"},
		{name: "null actions", in: `{"type":"relay_actions","actions":null}`, wantErr: "non-empty actions"},
		{name: "actions not an array", in: `{"type":"relay_actions","actions":{"type":"message"}}`, wantErr: "array"},
		{name: "no type", in: `{"actions":[]}`, wantErr: `no "type"`},
		{name: "unknown type", in: `{"type":"relay"}`, wantErr: "unknown"},
		{name: "type not a string", in: `{"type":3}`, wantErr: "relay output"},
		{name: "message without dst", in: `{"type":"relay_actions","actions":[{"type":"message","text":"x"}]}`, wantErr: "dst"},
		{name: "message without text", in: `{"type":"relay_actions","actions":[{"type":"message","dst":"w"}]}`, wantErr: "text"},
		{name: "plan without steps", in: `{"type":"relay_actions","actions":[{"type":"message","dst":"w","text":"x","plan":{"note":"n"}}]}`, wantErr: "plan"},
		{name: "plan steps not strings", in: `{"type":"relay_actions","actions":[{"type":"message","dst":"w","text":"x","plan":{"steps":[1]}}]}`, wantErr: "array"},
		{name: "unknown command", in: `{"type":"relay_actions","actions":[{"type":"control","dst":"w","command":"reboot"}]}`, wantErr: "reboot"},
		{name: "command not lower case", in: `{"type":"relay_actions","actions":[{"type":"control","dst":"w","command":"New"}]}`, wantErr: "New"},
		{name: "action without type", in: `{"type":"relay_actions","actions":[{"dst":"w","text":"x"}]}`, wantErr: "type"},
		{name: "unknown action type", in: `{"type":"relay_actions","actions":[{"type":"shout","dst":"w"}]}`, wantErr: "shout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseRelayOutput(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ParseRelayOutput(%q) error = %v, want one mentioning %q", c.in, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRelayOutput(%q) = %v", c.in, err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("ParseRelayOutput(%q) (-want +got):\n%s", c.in, d)
			}
		})
	}
}

func TestRelayGroupsSplitPerTarget(t *testing.T) {
	out, err := ParseRelayOutput(`{"type":"relay_actions","actions":[` +
		`{"type":"control","dst":"a","command":"new"},` +
		`{"type":"message","dst":"b","text":"for b"},` +
		`{"type":"message","dst":"a","text":"for a"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	newID := func() string { n++; return fmt.Sprintf("id%d", n) }
	ctx := &Context{ContextID: "c1", OwnerID: "owner"}
	got := out.Groups(newID, ctx, "t1")
	want := []Submit{
		{GroupID: "id1", Context: ctx, TaskID: "t1", Actions: []Action{
			{Type: ActionControl, Dst: "a", ActionID: "id2", ActionIndex: IntPtr(0), Command: "new"},
			{Type: ActionMessage, Dst: "a", ActionID: "id5", ActionIndex: IntPtr(2), Kind: KindUser, Text: "for a"},
		}},
		{GroupID: "id3", Context: ctx, TaskID: "t1", Actions: []Action{
			{Type: ActionMessage, Dst: "b", ActionID: "id4", ActionIndex: IntPtr(1), Kind: KindUser, Text: "for b"},
		}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Groups (-want +got):\n%s", d)
	}
	// The groups are valid submits.
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	for _, id := range []string{"owner", "a", "b"} {
		addAgent(t, b, s, id, "")
	}
	for _, g := range got {
		mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, g)))
	}
}

func TestMayRelay(t *testing.T) {
	for kind, want := range map[string]bool{KindUser: true, "": true, KindReply: false, KindSystem: false, KindControl: false} {
		if got := MayRelay(kind); got != want {
			t.Errorf("MayRelay(%q) = %v, want %v", kind, got, want)
		}
	}
}
