package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/weavehq/weave/plugins"
)

func TestLoadEventFile(t *testing.T) {
	tests := []struct {
		file string
		want plugins.Event
	}{
		{"claude-pretooluse.json", plugins.Event{
			Name: plugins.EventToolExecuteBefore, SessionID: "abc123", Cwd: "/home/u/project", Tool: plugins.ToolWrite,
			Args: map[string]any{"path": "/home/u/project/notes.md", "content": "hello"},
			Data: map[string]any{"transcript_path": "/home/u/.claude/projects/x/abc123.jsonl", "tool_use_id": "toolu_01"},
		}},
		{"claude-posttooluse.json", plugins.Event{
			Name: plugins.EventToolExecuteAfter, SessionID: "abc123", Cwd: "/home/u/project", Tool: plugins.ToolBash,
			Args:   map[string]any{"command": "go test ./..."},
			Result: &plugins.ToolResult{Output: "FAIL", IsError: true},
		}},
		{"weave-chat.json", plugins.Event{
			Name: plugins.EventChatMessage, SessionID: "s1", Agent: "loom", Cwd: "/home/u/project", Message: "ultrawork on the auth plan",
			Data: map[string]any{"tokens_used": 1000.0, "context_window": 200000.0},
			Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := LoadEventFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(plugins.Event{}, "Time"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("LoadEventFile(%s) mismatch (-want +got):\n%s", tt.file, diff)
			}
			if !tt.want.Time.IsZero() && !got.Time.Equal(tt.want.Time) {
				t.Errorf("LoadEventFile(%s).Time = %v, want %v", tt.file, got.Time, tt.want.Time)
			}
		})
	}
}

func TestLoadEventFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body, want string
	}{
		{"garbage", "not json", "not a JSON object"},
		{"array", "[1,2]", "not a JSON object"},
		{"no name", `{"session_id":"s"}`, `event has no "name"`},
		{"unknown event", `{"name":"tool.before"}`, `unknown event "tool.before"`},
		{"unknown field", `{"name":"chat.message","mesage":"hi"}`, `unknown field "mesage"`},
		{"unknown claude event", `{"hook_event_name":"TeammateIdle"}`, `unsupported hook_event_name "TeammateIdle"`},
		{"claude tool event without tool", `{"hook_event_name":"PreToolUse"}`, "has no tool_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".json")
			if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadEventFile(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("LoadEventFile(%s) error = %v, want it to name the file and contain %q", tt.body, err, tt.want)
			}
		})
	}
	if _, err := LoadEventFile(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "read event file") {
		t.Errorf("LoadEventFile(missing) error = %v, want a read error", err)
	}
}

// TestClaudeRoundTrip checks that an event survives conversion to Claude's
// input and back, tool names and argument names included.
func TestClaudeRoundTrip(t *testing.T) {
	for _, tool := range plugins.ToolNames() {
		ev := plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "s", Cwd: "/p", Tool: tool,
			Args: map[string]any{"path": "/p/a.go", "agent": "thread", "command": "ls"}}
		b, err := ClaudeInput(ev, ClaudePreToolUse)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ev, got, cmpopts.IgnoreFields(plugins.Event{}, "Time"), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip of %s (-want +got):\n%s", tool, diff)
		}
	}
}
