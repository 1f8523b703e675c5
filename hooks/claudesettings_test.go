package hooks

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseClaudeHooks(t *testing.T) {
	settings := `{
  "permissions": {"allow": ["Bash(go test:*)"]},
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "./check.sh"}]}],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]},
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "a"}, {"type": "command", "command": "b", "timeout": 0.5}]}
    ]
  }
}`
	for _, in := range []string{settings, settings[strings.Index(settings, `"hooks": {`)+len(`"hooks": `) : len(settings)-2]} {
		h, err := ParseClaudeHooks([]byte(in))
		if err != nil {
			t.Fatalf("ParseClaudeHooks: %v", err)
		}
		got, err := h.Specs()
		if err != nil {
			t.Fatal(err)
		}
		want := []CommandSpec{
			{Event: "PreToolUse", Matcher: "Bash", Command: "guard.sh", Timeout: 5 * time.Second},
			{Event: "PreToolUse", Matcher: "Edit|Write", Command: "a"},
			{Event: "PreToolUse", Matcher: "Edit|Write", Command: "b", Timeout: 500 * time.Millisecond},
			{Event: "Stop", Command: "./check.sh"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Specs() mismatch (-want +got):\n%s", diff)
		}
		regs, err := CommandHooks(got, CommandOptions{})
		if err != nil || len(regs) != 4 {
			t.Errorf("CommandHooks(specs) = %d hooks, %v; want 4", len(regs), err)
		}
	}
}

func TestClaudeHooksErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"Notifcation": [{"hooks": [{"type": "command", "command": "x"}]}]}`, "hooks.Notifcation: unknown event"},
		{`{"PreToolUse": [{"hooks": [{"type": "script", "command": "x"}]}]}`, `hooks.PreToolUse[0].hooks[0]: type "script" is not supported`},
		{`{"PreToolUse": [{"hooks": [{"command": "x", "timeout": -1}]}]}`, "negative timeout"},
	}
	for _, tt := range tests {
		h, err := ParseClaudeHooks([]byte(tt.in))
		if err == nil {
			_, err = h.Specs()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse %s: error = %v, want %q", tt.in, err, tt.want)
		}
	}
	if _, err := ParseClaudeHooks([]byte(`[1]`)); err == nil {
		t.Error("ParseClaudeHooks([1]) gave no error")
	}
}

func TestFind(t *testing.T) {
	regs := BuiltinHooks(BuiltinConfig{Plans: &memPlans{}})
	r, err := Find(regs, KeywordDetectorID)
	if err != nil || r.Info.Name != KeywordDetectorID {
		t.Errorf("Find(%s) = %s, %v", KeywordDetectorID, r.Info.Name, err)
	}
	_, err = Find(regs, "weave.nope")
	if err == nil || !strings.Contains(err.Error(), `no hook named "weave.nope" (have: weave.context-window-monitor,`) {
		t.Errorf("Find(weave.nope) error = %v, want the names listed", err)
	}
}
