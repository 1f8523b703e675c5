package loop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
)

// The examples of event-schema-v0.md, section 8.
const (
	simpleState = `{
  "schema": 0,
  "event": "STATE",
  "run_id": "loop-1703123456-12345",
  "updated_at": "2024-12-21T10:00:00Z",
  "stack": [
    {
      "id": "loop-1703123456-12345",
      "mode": "loop",
      "iter": 3,
      "max": 10,
      "prompt_file": "/tmp/idle-loop-xxx/prompt.txt"
    }
  ]
}`
	nestedState = `{
  "schema": 0,
  "event": "STATE",
  "run_id": "grind-1703123456-12345",
  "updated_at": "2024-12-21T10:30:00Z",
  "stack": [
    {
      "id": "grind-1703123456-12345",
      "mode": "grind",
      "iter": 3,
      "max": 100,
      "prompt_file": "/tmp/idle-grind-xxx/prompt.txt",
      "filter": "priority:1"
    },
    {
      "id": "issue-auth-123-1703123456",
      "mode": "issue",
      "iter": 2,
      "max": 10,
      "prompt_file": "/tmp/idle-issue-xxx/prompt.txt",
      "issue_id": "auth-123",
      "worktree_path": "/path/to/.worktrees/idle/auth-123",
      "branch": "idle/issue/auth-123",
      "base_ref": "main"
    }
  ]
}`
	doneEvent      = `{"schema": 0, "event": "DONE", "reason": "COMPLETE", "stack": []}`
	abortCancelled = `{"schema": 0, "event": "ABORT", "reason": "USER_CANCELLED", "stack": []}`
	abortInternal  = `{"schema": 0, "event": "ABORT", "stack": []}`
	anchorEvent    = `{
  "schema": 0,
  "goal": "Working on issue: auth-123",
  "mode": "issue",
  "iteration": "3/10",
  "progress": "Recent commits: abc1234; def5678; ghi9012",
  "modified_files": "src/auth.py, tests/test_auth.py, README.md",
  "next_step": "Continue working on the task. Check git status and loop state.",
  "timestamp": "2024-12-21T10:30:00Z"
}`
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Event
	}{
		{"simple STATE", simpleState, Event{
			Kind: KindState, RunID: "loop-1703123456-12345", UpdatedAt: at("2024-12-21T10:00:00Z"),
			Stack: []Frame{{ID: "loop-1703123456-12345", Mode: ModeLoop, Iter: 3, Max: 10, PromptFile: "/tmp/idle-loop-xxx/prompt.txt"}},
		}},
		{"nested STATE", nestedState, Event{
			Kind: KindState, RunID: "grind-1703123456-12345", UpdatedAt: at("2024-12-21T10:30:00Z"),
			Stack: []Frame{
				{ID: "grind-1703123456-12345", Mode: ModeGrind, Iter: 3, Max: 100, PromptFile: "/tmp/idle-grind-xxx/prompt.txt", Filter: "priority:1"},
				{ID: "issue-auth-123-1703123456", Mode: ModeIssue, Iter: 2, Max: 10, PromptFile: "/tmp/idle-issue-xxx/prompt.txt",
					IssueID: "auth-123", WorktreePath: "/path/to/.worktrees/idle/auth-123", Branch: "idle/issue/auth-123", BaseRef: "main"},
			},
		}},
		{"DONE", doneEvent, Event{Kind: KindDone, Reason: ReasonComplete, Stack: []Frame{}}},
		{"ABORT cancelled", abortCancelled, Event{Kind: KindAbort, Reason: ReasonUserCancelled, Stack: []Frame{}}},
		{"ABORT internal", abortInternal, Event{Kind: KindAbort, Stack: []Frame{}}},
		{"schema 1 is read", strings.Replace(doneEvent, `"schema": 0`, `"schema": 1`, 1),
			Event{Schema: 1, Kind: KindDone, Reason: ReasonComplete, Stack: []Frame{}}},
		{"unknown fields are ignored", `{"schema":0,"event":"DONE","reason":"MAX_ISSUES","stack":[],"host":"x","extra":{"a":[1]}}`,
			Event{Kind: KindDone, Reason: ReasonMaxIssues, Stack: []Frame{}}},
		{"unknown frame fields are ignored", strings.Replace(simpleState, `"iter": 3,`, `"iter": 3, "color": "blue",`, 1), Event{
			Kind: KindState, RunID: "loop-1703123456-12345", UpdatedAt: at("2024-12-21T10:00:00Z"),
			Stack: []Frame{{ID: "loop-1703123456-12345", Mode: ModeLoop, Iter: 3, Max: 10, PromptFile: "/tmp/idle-loop-xxx/prompt.txt"}},
		}},
	}
	// What idle writes beyond the document (its stop hook and /loop
	// command): DONE with STUCK or ABORT, ABORT with ERROR, schema 2 frames
	// that carry prompt_blob and no prompt_file, its frame flags.
	tests = append(tests, []struct {
		name string
		in   string
		want Event
	}{
		{"idle DONE STUCK", `{"schema":1,"event":"DONE","reason":"STUCK","stack":[]}`,
			Event{Schema: 1, Kind: KindDone, Reason: ReasonStuck, Stack: []Frame{}}},
		{"idle DONE ABORT", `{"schema":1,"event":"DONE","reason":"ABORT","stack":[]}`,
			Event{Schema: 1, Kind: KindDone, Reason: ReasonAbort, Stack: []Frame{}}},
		{"idle ABORT ERROR", `{"schema":1,"event":"ABORT","reason":"ERROR","stack":[]}`,
			Event{Schema: 1, Kind: KindAbort, Reason: ReasonError, Stack: []Frame{}}},
		{"idle schema 2 prompt_blob", `{"schema":2,"event":"STATE","run_id":"loop-1703123456-12345","updated_at":"2024-12-21T10:00:00Z","stack":[{"id":"loop-1703123456-12345","mode":"loop","iter":3,"max":10,"prompt_blob":"sha256:abc","reviewed":true,"checkpoint_reviewed":false}]}`,
			Event{Schema: 2, Kind: KindState, RunID: "loop-1703123456-12345", UpdatedAt: at("2024-12-21T10:00:00Z"),
				Stack: []Frame{{ID: "loop-1703123456-12345", Mode: ModeLoop, Iter: 3, Max: 10, PromptBlob: "sha256:abc"}}}},
		{"resumable ABORT", `{"schema":0,"event":"ABORT","resumable":true,"stack":[]}`,
			Event{Kind: KindAbort, Resumable: true, Stack: []Frame{}}},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode() = %v, want nil", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"not JSON", `{"schema":`, "decode loop event"},
		{"no schema", `{"event":"DONE","reason":"COMPLETE","stack":[]}`, "no schema"},
		{"schema 3", `{"schema":3,"event":"DONE","reason":"COMPLETE","stack":[]}`, "schema 3"},
		{"resumable DONE", `{"schema":0,"event":"DONE","reason":"COMPLETE","resumable":true,"stack":[]}`, "resumable"},
		{"frame with neither prompt", `{"schema":0,"event":"STATE","run_id":"loop-1-2","updated_at":"2024-12-21T10:00:00Z","stack":[{"id":"a","mode":"loop","iter":1,"max":2}]}`, "prompt_file"},
		{"no stack", `{"schema":0,"event":"DONE","reason":"COMPLETE"}`, "no stack"},
		{"null stack", `{"schema":0,"event":"DONE","reason":"COMPLETE","stack":null}`, "no stack"},
		{"unknown kind", `{"schema":0,"event":"PAUSE","stack":[]}`, "PAUSE"},
		{"DONE without reason", `{"schema":0,"event":"DONE","stack":[]}`, "DONE event reason"},
		{"DONE bad reason", `{"schema":0,"event":"DONE","reason":"USER_CANCELLED","stack":[]}`, "DONE event reason"},
		{"DONE with frames", strings.Replace(simpleState, `"event": "STATE"`, `"event": "DONE", "reason": "COMPLETE"`, 1), "want none"},
		{"ABORT bad reason", `{"schema":0,"event":"ABORT","reason":"OOPS","stack":[]}`, "ABORT event reason"},
		{"ABORT with frames", strings.Replace(simpleState, `"event": "STATE"`, `"event": "ABORT"`, 1), "want none"},
		{"STATE without run_id", strings.Replace(simpleState, `"run_id": "loop-1703123456-12345",`, ``, 1), "run id"},
		{"STATE bad run_id", strings.Replace(simpleState, `"run_id": "loop-1703123456-12345"`, `"run_id": "spin-1-2"`, 1), "run id"},
		{"STATE without updated_at", strings.Replace(simpleState, `"updated_at": "2024-12-21T10:00:00Z",`, ``, 1), "updated_at"},
		{"STATE bad updated_at", strings.Replace(simpleState, `2024-12-21T10:00:00Z`, `yesterday`, 1), "decode loop event"},
		{"STATE empty stack", `{"schema":0,"event":"STATE","run_id":"loop-1-2","updated_at":"2024-12-21T10:00:00Z","stack":[]}`, "empty stack"},
		{"frame iter above max", strings.Replace(simpleState, `"iter": 3`, `"iter": 11`, 1), "iter 11"},
		{"frame iter 0", strings.Replace(simpleState, `"iter": 3`, `"iter": 0`, 1), "iter 0"},
		{"frame relative prompt", strings.Replace(simpleState, `/tmp/idle-loop-xxx/prompt.txt`, `prompt.txt`, 1), "absolute"},
		{"frame bad mode", strings.Replace(simpleState, `"mode": "loop"`, `"mode": "spin"`, 1), "mode"},
		{"frame without id", strings.Replace(simpleState, `"id": "loop-1703123456-12345",`, ``, 1), "id is empty"},
		{"issue frame without branch", strings.Replace(nestedState, `"branch": "idle/issue/auth-123",`, ``, 1), "branch"},
		{"issue frame relative worktree", strings.Replace(nestedState, `/path/to/.worktrees`, `.worktrees`, 1), "worktree_path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Decode() = %v, want an error mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	state := NewState(RunID(ModeLoop, time.Unix(1703123456, 0), 12345), at("2024-12-21T10:00:00Z"),
		Frame{ID: "loop-1703123456-12345", Mode: ModeLoop, Iter: 3, Max: 10, PromptFile: "/tmp/idle-loop-xxx/prompt.txt"})
	tests := []struct {
		name string
		in   Event
		want string
	}{
		{"STATE matches the spec example", state, simpleState},
		{"DONE has an empty stack", NewDone(ReasonComplete), doneEvent},
		{"ABORT cancelled", NewAbort(ReasonUserCancelled), abortCancelled},
		{"ABORT internal omits reason", NewAbort(""), abortInternal},
		{"a pause is a resumable ABORT", NewPause(""), `{"schema":0,"event":"ABORT","resumable":true,"stack":[]}`},
		{"a cancelled pause", NewPause(ReasonUserCancelled), `{"schema":0,"event":"ABORT","reason":"USER_CANCELLED","resumable":true,"stack":[]}`},
		{"prompt_blob beside prompt_file", NewState("loop-1-2", at("2024-12-21T10:00:00Z"), Frame{ID: "loop-1-2", Mode: ModeLoop, Iter: 1, Max: 2, PromptFile: "/p.md", PromptBlob: "sha256:00"}),
			`{"schema":0,"event":"STATE","run_id":"loop-1-2","updated_at":"2024-12-21T10:00:00Z","stack":[{"id":"loop-1-2","mode":"loop","iter":1,"max":2,"prompt_file":"/p.md","prompt_blob":"sha256:00"}]}`},
		{"schema forced to 0", Event{Schema: 1, Kind: KindDone, Reason: ReasonMaxIterations}, `{"schema":0,"event":"DONE","reason":"MAX_ITERATIONS","stack":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.in)
			if err != nil {
				t.Fatalf("Encode() = %v, want nil", err)
			}
			if diff := cmp.Diff(canon(t, tt.want), canon(t, string(got))); diff != "" {
				t.Errorf("Encode() JSON (-want +got):\n%s", diff)
			}
			back, err := Decode(got)
			if err != nil {
				t.Fatalf("Decode(Encode()) = %v", err)
			}
			want := tt.in
			want.Schema = 0
			if want.Stack == nil {
				want.Stack = []Frame{}
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("Decode(Encode()) (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Encode(Event{Kind: KindDone, Reason: "FINISHED"}); err == nil {
		t.Errorf("Encode(DONE FINISHED) = nil error, want an error")
	}
	if _, err := Encode(Event{Kind: KindAbort, Stack: state.Stack}); err == nil {
		t.Errorf("Encode(ABORT with frames) = nil error, want an error")
	}
}

func canon(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func TestAnchor(t *testing.T) {
	a, err := DecodeAnchor([]byte(anchorEvent))
	if err != nil {
		t.Fatalf("DecodeAnchor(spec example) = %v", err)
	}
	want := Anchor{
		Goal: "Working on issue: auth-123", Mode: ModeIssue, Iteration: "3/10",
		Progress: "Recent commits: abc1234; def5678; ghi9012", ModifiedFiles: "src/auth.py, tests/test_auth.py, README.md",
		NextStep: "Continue working on the task. Check git status and loop state.", Timestamp: at("2024-12-21T10:30:00Z"),
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("DecodeAnchor (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"src/auth.py", "tests/test_auth.py", "README.md"}, a.Files()); diff != "" {
		t.Errorf("Files() (-want +got):\n%s", diff)
	}
	data, err := EncodeAnchor(a)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(canon(t, anchorEvent), canon(t, string(data))); diff != "" {
		t.Errorf("EncodeAnchor (-want +got):\n%s", diff)
	}
	bad := []struct{ name, in, wantErr string }{
		{"no schema", strings.Replace(anchorEvent, `"schema": 0,`, ``, 1), "no schema"},
		{"bad iteration", strings.Replace(anchorEvent, `"3/10"`, `"3 of 10"`, 1), "iteration"},
		{"iteration above max", strings.Replace(anchorEvent, `"3/10"`, `"11/10"`, 1), "iteration"},
		{"no goal", strings.Replace(anchorEvent, `"goal": "Working on issue: auth-123",`, ``, 1), "goal"},
		{"bad mode", strings.Replace(anchorEvent, `"mode": "issue"`, `"mode": "x"`, 1), "mode"},
		{"no progress", strings.Replace(anchorEvent, `"progress": "Recent commits: abc1234; def5678; ghi9012",`, ``, 1), "progress"},
		{"no modified_files", strings.Replace(anchorEvent, `"modified_files": "src/auth.py, tests/test_auth.py, README.md",`, ``, 1), "modified_files"},
		{"no timestamp", strings.Replace(anchorEvent, `,
  "timestamp": "2024-12-21T10:30:00Z"`, ``, 1), "timestamp"},
	}
	for _, tt := range bad {
		if _, err := DecodeAnchor([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("DecodeAnchor(%s) = %v, want an error mentioning %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestParseIteration(t *testing.T) {
	tests := []struct {
		in       string
		cur, max int
		ok       bool
	}{
		{"3/10", 3, 10, true},
		{"0/1", 0, 1, true},
		{"10/10", 10, 10, true},
		{"11/10", 0, 0, false},
		{"3/0", 0, 0, false},
		{"-1/3", 0, 0, false},
		{"3", 0, 0, false},
		{"a/b", 0, 0, false},
		{"3/10/2", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		cur, max, err := ParseIteration(tt.in)
		if (err == nil) != tt.ok || cur != tt.cur || max != tt.max {
			t.Errorf("ParseIteration(%q) = %d, %d, %v, want %d, %d, ok=%v", tt.in, cur, max, err, tt.cur, tt.max, tt.ok)
		}
	}
	if got := Iteration(3, 10); got != "3/10" {
		t.Errorf("Iteration(3, 10) = %q, want 3/10", got)
	}
}

func TestRunID(t *testing.T) {
	if got := RunID(ModeLoop, time.Unix(1703123456, 0), 12345); got != "loop-1703123456-12345" {
		t.Errorf("RunID() = %q, want loop-1703123456-12345", got)
	}
	tests := []struct {
		in   string
		mode Mode
		sec  int64
		pid  int
		ok   bool
	}{
		{"loop-1703123456-12345", ModeLoop, 1703123456, 12345, true},
		{"grind-1-2", ModeGrind, 1, 2, true},
		{"issue-1703123456-1", ModeIssue, 1703123456, 1, true},
		{"spin-1-2", "", 0, 0, false},
		{"loop-x-2", "", 0, 0, false},
		{"loop-1", "", 0, 0, false},
		{"loop-1-2-3", "", 0, 0, false},
		{"loop--1-2", "", 0, 0, false},
	}
	for _, tt := range tests {
		mode, start, pid, err := ParseRunID(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseRunID(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if tt.ok && (mode != tt.mode || start.Unix() != tt.sec || pid != tt.pid) {
			t.Errorf("ParseRunID(%q) = %s, %d, %d, want %s, %d, %d", tt.in, mode, start.Unix(), pid, tt.mode, tt.sec, tt.pid)
		}
	}
}

func TestStale(t *testing.T) {
	updated := at("2024-12-21T10:00:00Z")
	state := NewState("loop-1-2", updated, Frame{ID: "f", Mode: ModeLoop, Iter: 1, Max: 1, PromptFile: "/p"})
	tests := []struct {
		name string
		e    Event
		now  time.Time
		want bool
	}{
		{"fresh", state, updated.Add(time.Minute), false},
		{"exactly two hours", state, updated.Add(StateTTL), false},
		{"past two hours", state, updated.Add(StateTTL + time.Second), true},
		{"DONE never stale", NewDone(ReasonComplete), updated.Add(48 * time.Hour), false},
		{"ABORT never stale", NewAbort(""), updated.Add(48 * time.Hour), false},
	}
	for _, tt := range tests {
		if got := Stale(tt.e, tt.now); got != tt.want {
			t.Errorf("Stale(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPublishOnBus(t *testing.T) {
	b, err := bus.NewMemory(bus.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, ok, err := Current(ctx, b); ok || err != nil {
		t.Fatalf("Current() on an empty bus = %v, %v, want false, nil", ok, err)
	}
	state := NewState("loop-1703123456-12345", at("2024-12-21T10:00:00Z"),
		Frame{ID: "loop-1703123456-12345", Mode: ModeLoop, Iter: 1, Max: 3, PromptFile: "/p"})
	if _, err := Publish(ctx, b, state); err != nil {
		t.Fatalf("Publish(STATE) = %v", err)
	}
	got, ok, err := Current(ctx, b)
	if err != nil || !ok {
		t.Fatalf("Current() = %v, %v, want the STATE", ok, err)
	}
	if diff := cmp.Diff(state, got); diff != "" {
		t.Errorf("Current() (-want +got):\n%s", diff)
	}
	if _, err := Publish(ctx, b, NewDone(ReasonComplete)); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := Current(ctx, b); got.Kind != KindDone {
		t.Errorf("Current().Kind = %s after DONE, want DONE", got.Kind)
	}
	if _, err := Publish(ctx, b, NewDone("NOPE")); err == nil {
		t.Errorf("Publish(invalid DONE) = nil, want an error")
	}
	anchor := Anchor{Goal: "g", Mode: ModeLoop, Iteration: "1/3", NextStep: "go on", Timestamp: at("2024-12-21T10:00:00Z")}
	for range 2 {
		if _, err := PublishAnchor(ctx, b, anchor); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := b.Replay(ctx, TopicAnchor, 1, func(_ uint64, m bus.Message) bool {
		if _, err := DecodeAnchor(m.Payload); err != nil {
			t.Errorf("DecodeAnchor(replayed) = %v", err)
		}
		n++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("loop:anchor holds %d anchors, want 2", n)
	}
}
