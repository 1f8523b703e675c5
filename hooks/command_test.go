package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/weavehq/weave/internal/textcap"
	"github.com/weavehq/weave/plugins"
)

// script writes an executable shell script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCommand runs one command hook through a pipeline.
func runCommand(t *testing.T, spec CommandSpec, project string, ev plugins.Event) Outcome {
	t.Helper()
	ev.Cwd = project
	out, err := commandPipeline(t, spec, project).Run(context.Background(), ev)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// commandPipeline is a pipeline of the one command hook spec.
func commandPipeline(t *testing.T, spec CommandSpec, project string) *Pipeline {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "cmd"
	}
	h, err := NewCommandHook(spec, CommandOptions{ProjectDir: project})
	if err != nil {
		t.Fatalf("NewCommandHook: %v", err)
	}
	p, err := NewPipeline([]Registered{h.Registered()}, Options{})
	if err != nil {
		t.Fatalf("NewPipeline: %v", err)
	}
	return p
}

func bashEvent(command string) plugins.Event {
	return plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "s1", Tool: plugins.ToolBash, Args: map[string]any{"command": command}}
}

func TestCommandHookDecisions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		spec CommandSpec
		ev   plugins.Event
		want summary
	}{
		{
			name: "exit 2 blocks with stderr as the reason",
			spec: CommandSpec{Event: "PreToolUse", Matcher: "Bash", Command: script(t, dir, "exit2.sh", `
cat >/dev/null
echo "rm -rf is not allowed here" >&2
exit 2
`)},
			ev: bashEvent("rm -rf /"),
			want: summary{Action: plugins.Block, BlockedBy: "cmd", Reason: "cmd: rm -rf is not allowed here", Args: map[string]any{"command": "rm -rf /"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Block, Reason: "rm -rf is not allowed here"}}},
		},
		{
			name: "a huge stderr reason is capped",
			spec: CommandSpec{Event: "PreToolUse", Command: `cat >/dev/null; head -c 100000 /dev/zero | tr '\0' x >&2; exit 2`},
			ev:   bashEvent("ls"),
			want: summary{Action: plugins.Block, BlockedBy: "cmd", Reason: "cmd: " + textcap.Cap(strings.Repeat("x", 100000), MaxReason), Args: map[string]any{"command": "ls"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Block, Reason: textcap.Cap(strings.Repeat("x", 100000), MaxReason)}}},
		},
		{
			name: "permissionDecision deny blocks",
			spec: CommandSpec{Event: "PreToolUse", Command: script(t, dir, "deny.sh", `
cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no network"}}'
`)},
			ev: bashEvent("curl x"),
			want: summary{Action: plugins.Block, BlockedBy: "cmd", Reason: "cmd: no network", Args: map[string]any{"command": "curl x"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Block, Reason: "no network"}}},
		},
		{
			name: "permissionDecision ask asks, blocking where nobody is asked",
			spec: CommandSpec{Event: "PreToolUse", Command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"pushes to main"}}'`},
			ev:   bashEvent("git push"),
			want: summary{Action: plugins.Block, BlockedBy: "cmd", Reason: "cmd: needs approval: pushes to main", Args: map[string]any{"command": "git push"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Ask, Reason: "needs approval: pushes to main"}}, Ask: true},
		},
		{
			name: "additionalContext is delivered",
			spec: CommandSpec{Event: "PreToolUse", Command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow","additionalContext":"tests live in ./t"}}'`},
			ev:   bashEvent("ls"),
			want: summary{Action: plugins.Allow, Args: map[string]any{"command": "ls"}, Context: []string{"tests live in ./t"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Allow}}},
		},
		{
			name: "updatedInput modifies, with Claude's names mapped back",
			spec: CommandSpec{Event: "PreToolUse", Matcher: "Write|Edit", Command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"file_path":"/p/b.md","content":"new"}}}'`},
			ev:   plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolWrite, Args: map[string]any{"path": "a.md", "content": "old", "mode": "0644"}},
			want: summary{Action: plugins.Modify, Args: map[string]any{"path": "/p/b.md", "content": "new", "mode": "0644"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Modify}}},
		},
		{
			name: "decision block with reason",
			spec: CommandSpec{Event: "UserPromptSubmit", Command: `cat >/dev/null; echo '{"decision":"block","reason":"no secrets in prompts"}'`},
			ev:   plugins.Event{Name: plugins.EventChatMessage, Message: "my key is sk-1"},
			want: summary{Action: plugins.Block, BlockedBy: "cmd", Reason: "cmd: no secrets in prompts", Text: "my key is sk-1",
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Block, Reason: "no secrets in prompts"}}},
		},
		{
			name: "continue false stops with stopReason",
			spec: CommandSpec{Event: "PostToolUseFailure", Command: `cat >/dev/null; echo '{"continue":false,"stopReason":"build broke"}'`},
			ev:   plugins.Event{Name: plugins.EventToolExecuteAfter, Tool: plugins.ToolBash, Args: map[string]any{"command": "make"}, Result: &plugins.ToolResult{Output: "err", IsError: true, ExitCode: 2}},
			want: summary{Action: plugins.Block, BlockedBy: "cmd", Reason: "cmd: build broke", Args: map[string]any{"command": "make"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Block, Reason: "build broke"}}},
		},
		{
			name: "plain stdout on UserPromptSubmit becomes context",
			spec: CommandSpec{Event: "UserPromptSubmit", Command: `cat >/dev/null; echo "branch: main"`},
			ev:   plugins.Event{Name: plugins.EventChatMessage, Message: "hi"},
			want: summary{Action: plugins.Allow, Text: "hi", Context: []string{"branch: main"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Allow}}},
		},
		{
			name: "Stop hook block means keep working",
			spec: CommandSpec{Event: "Stop", Command: `cat >/dev/null; echo '{"decision":"block","reason":"tests still fail; fix them"}'`},
			ev:   plugins.Event{Name: plugins.EventSessionIdle},
			want: summary{Action: plugins.Allow, Context: []string{"tests still fail; fix them"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Allow}}},
		},
		{
			name: "garbage stdout on exit 0 allows and is reported",
			spec: CommandSpec{Event: "PreToolUse", Command: `cat >/dev/null; echo '{"decision": bl'`},
			ev:   bashEvent("ls"),
			want: summary{Action: plugins.Allow, Args: map[string]any{"command": "ls"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Allow, Note: "stdout is not valid JSON; ignored: invalid character 'b' looking for beginning of value"}}},
		},
		{
			name: "non-JSON text on PreToolUse is ignored and reported",
			spec: CommandSpec{Event: "PreToolUse", Command: `cat >/dev/null; echo checked`},
			ev:   bashEvent("ls"),
			want: summary{Action: plugins.Allow, Args: map[string]any{"command": "ls"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Allow, Note: "stdout is not JSON; ignored: checked"}}},
		},
		{
			name: "other exit codes are non-blocking errors",
			spec: CommandSpec{Event: "PreToolUse", Command: `cat >/dev/null; echo "jq: not found" >&2; exit 1`},
			ev:   bashEvent("ls"),
			want: summary{Action: plugins.Allow, Args: map[string]any{"command": "ls"},
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Allow, Policy: FailOpen, Error: "command hook cmd exited 1: jq: not found"}}},
		},
		{
			name: "configured closed policy blocks on error",
			spec: CommandSpec{Event: "PreToolUse", Fail: FailClosed, Command: `exit 3`},
			ev:   bashEvent("ls"),
			want: summary{Action: plugins.Block, BlockedBy: "cmd", Args: map[string]any{"command": "ls"},
				Reason: "cmd: hook cmd failed (command hook cmd exited 3) and its failure policy is closed",
				Reports: []Report{{Hook: "cmd", Source: SourceCommand, Action: plugins.Block, Policy: FailClosed, Error: "command hook cmd exited 3",
					Reason: "hook cmd failed (command hook cmd exited 3) and its failure policy is closed"}}},
		},
		{
			name: "matcher that does not match: hook not run",
			spec: CommandSpec{Event: "PreToolUse", Matcher: "Edit|Write", Command: `exit 2`},
			ev:   bashEvent("ls"),
			want: summary{Action: plugins.Allow, Args: map[string]any{"command": "ls"}},
		},
		{
			name: "matcher is anchored: Bash does not match BashOutput",
			spec: CommandSpec{Event: "PreToolUse", Matcher: "Bash", Command: `exit 2`},
			ev:   plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: "BashOutput"},
			want: summary{Action: plugins.Allow},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCommand(t, tt.spec, dir, tt.ev)
			if diff := cmp.Diff(tt.want, summarize(got), ignoreDurations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("outcome mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommandHookInput(t *testing.T) {
	project := t.TempDir()
	out := filepath.Join(t.TempDir(), "seen")
	cmdline := `cat > "` + out + `.json"; pwd > "` + out + `.pwd"; printf '%s\n%s\n' "$CLAUDE_PROJECT_DIR" "$WEAVE_PROJECT_DIR" > "` + out + `.env"`
	// An event with a session gets the session's transcript.
	transcript := func(id string) string { return filepath.Join(project, ".weave", "sessions", id+".jsonl") }
	tests := []struct {
		name string
		spec CommandSpec
		ev   plugins.Event
		want map[string]any
	}{
		{
			name: "PreToolUse",
			spec: CommandSpec{Event: "PreToolUse", Command: cmdline},
			ev:   plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "s1", Tool: plugins.ToolEdit, Args: map[string]any{"path": "src/a.go", "old_string": "a", "new_string": "b"}},
			want: map[string]any{
				"session_id": "s1", "transcript_path": transcript("s1"), "cwd": project, "permission_mode": "default", "hook_event_name": "PreToolUse",
				"tool_name":  "Edit",
				"tool_input": map[string]any{"file_path": filepath.Join(project, "src/a.go"), "old_string": "a", "new_string": "b"},
			},
		},
		{
			name: "PostToolUse",
			spec: CommandSpec{Event: "PostToolUse", Command: cmdline},
			ev: plugins.Event{Name: plugins.EventToolExecuteAfter, SessionID: "s1", Tool: plugins.ToolBash, Args: map[string]any{"command": "true"},
				Result: &plugins.ToolResult{Output: "ok"}, Data: map[string]any{"tool_use_id": "toolu_1"}},
			want: map[string]any{
				"session_id": "s1", "transcript_path": transcript("s1"), "cwd": project, "permission_mode": "default", "hook_event_name": "PostToolUse",
				"tool_name": "Bash", "tool_input": map[string]any{"command": "true"}, "tool_use_id": "toolu_1",
				"tool_response": map[string]any{"output": "ok", "success": true, "exit_code": float64(0)},
			},
		},
		{
			name: "PostToolUseFailure",
			spec: CommandSpec{Event: "PostToolUseFailure", Command: cmdline},
			ev: plugins.Event{Name: plugins.EventToolExecuteAfter, SessionID: "s1", Tool: plugins.ToolBash, Args: map[string]any{"command": "false"},
				Result: &plugins.ToolResult{Output: "oops", IsError: true, ExitCode: 1}, Data: map[string]any{"tool_use_id": "toolu_2"}},
			want: map[string]any{
				"session_id": "s1", "transcript_path": transcript("s1"), "cwd": project, "permission_mode": "default", "hook_event_name": "PostToolUseFailure",
				"tool_name": "Bash", "tool_input": map[string]any{"command": "false"}, "tool_use_id": "toolu_2", "error": "oops",
			},
		},
		{
			name: "UserPromptSubmit",
			spec: CommandSpec{Event: "UserPromptSubmit", Command: cmdline},
			ev:   plugins.Event{Name: plugins.EventChatMessage, SessionID: "s2", Message: "do it", Data: map[string]any{"source": "user"}},
			want: map[string]any{"session_id": "s2", "transcript_path": transcript("s2"), "cwd": project, "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": "do it"},
		},
		{
			name: "Stop",
			spec: CommandSpec{Event: "Stop", Command: cmdline},
			ev:   plugins.Event{Name: plugins.EventSessionIdle, SessionID: "s3"},
			want: map[string]any{"session_id": "s3", "transcript_path": transcript("s3"), "cwd": project, "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": false},
		},
		{
			name: "PreCompact",
			spec: CommandSpec{Event: "PreCompact", Command: cmdline},
			ev:   plugins.Event{Name: plugins.EventSessionCompacting, SessionID: "s4"},
			want: map[string]any{"session_id": "s4", "transcript_path": transcript("s4"), "cwd": project, "permission_mode": "default", "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""},
		},
		{
			name: "UserPromptSubmit without a session",
			spec: CommandSpec{Event: "UserPromptSubmit", Command: cmdline},
			ev:   plugins.Event{Name: plugins.EventChatMessage, Message: "do it", Data: map[string]any{"source": "user"}},
			want: map[string]any{"session_id": "", "transcript_path": "", "cwd": project, "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": "do it"},
		},
		{
			name: "SessionEnd",
			spec: CommandSpec{Event: "SessionEnd", Command: cmdline},
			ev:   plugins.Event{Name: plugins.EventSessionEnd, SessionID: "s5", Data: map[string]any{"reason": "logout"}},
			want: map[string]any{"session_id": "s5", "transcript_path": transcript("s5"), "cwd": project, "permission_mode": "default", "hook_event_name": "SessionEnd", "reason": "logout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCommand(t, tt.spec, project, tt.ev)
			if res.Action != plugins.Allow || len(res.Reports) != 1 || res.Reports[0].Error != "" {
				t.Fatalf("outcome = %+v, want a clean allow", res)
			}
			b, err := os.ReadFile(out + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("stdin was not JSON: %v: %s", err, b)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stdin mismatch (-want +got):\n%s", diff)
			}
			pwd, _ := os.ReadFile(out + ".pwd")
			realProject, _ := filepath.EvalSymlinks(project)
			if got := strings.TrimSpace(string(pwd)); got != realProject && got != project {
				t.Errorf("working directory = %q, want %q", got, project)
			}
			env, _ := os.ReadFile(out + ".env")
			if want := project + "\n" + project + "\n"; string(env) != want {
				t.Errorf("CLAUDE_PROJECT_DIR/WEAVE_PROJECT_DIR = %q, want %q", env, want)
			}
		})
	}
}

// processGone reports whether pid has exited (gone, or a zombie awaiting its
// reaper).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func TestCommandHookTimeoutKillsProcessGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to watch the grandchild")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	// The grandchild is a separate sleep the shell waits on; a timeout must
	// take it down too.
	cmd := script(t, dir, "hang.sh", `
sleep 300 &
echo $! > "`+pidFile+`.tmp"
mv "`+pidFile+`.tmp" "`+pidFile+`"
wait
`)
	// A machine too busy to start the script within the timeout is given
	// a longer one: the test is about what the timeout ends, not how soon
	// a shell starts.
	var got Outcome
	for _, timeout := range []time.Duration{2 * time.Second, 8 * time.Second, 32 * time.Second} {
		got = runCommand(t, CommandSpec{Event: "PreToolUse", Command: cmd, Timeout: timeout, Fail: FailClosed}, dir, bashEvent("ls"))
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
	}
	if got.Action != plugins.Block || len(got.Reports) != 1 || !got.Reports[0].TimedOut {
		t.Fatalf("outcome = %+v, want a timed-out block", got)
	}
	if !strings.Contains(got.Reason, "cmd") || !strings.Contains(got.Reason, "timed out") {
		t.Errorf("Reason = %q, want it to name the hook and the timeout", got.Reason)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the script never started its grandchild: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a failure guard only
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running after the hook timed out", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCommandHookBackgroundChildDoesNotHoldTheHook(t *testing.T) {
	dir := t.TempDir()
	// The background sleep keeps stdout open; the hook must still finish
	// once the shell exits.
	p := commandPipeline(t, CommandSpec{Event: "PreToolUse", Command: `cat >/dev/null; sleep 3 & echo '{"decision":"block","reason":"bg"}'`, Timeout: time.Minute}, dir)
	ev := bashEvent("ls")
	ev.Cwd = dir
	done := make(chan Outcome, 1)
	go func() {
		out, err := p.Run(context.Background(), ev)
		if err != nil {
			out = Outcome{Reason: "Run: " + err.Error()}
		}
		done <- out
	}()
	select {
	case got := <-done:
		if got.Action != plugins.Block || got.Reason != "cmd: bg" {
			t.Errorf("outcome = %q %q, want block %q", got.Action, got.Reason, "cmd: bg")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hook held by its background child")
	}
}

func TestRunOneCommandNotMatching(t *testing.T) {
	h, err := NewCommandHook(CommandSpec{Name: "edits", Event: ClaudePreToolUse, Matcher: "Edit", Command: "exit 2"}, CommandOptions{ProjectDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := RunOne(context.Background(), h.Registered(), bashEvent("ls"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Report{{Hook: "edits", Source: SourceCommand, Skipped: true, Note: "the hook's matcher does not match this event"}}
	if diff := cmp.Diff(want, out.Reports); diff != "" || out.Action != plugins.Allow {
		t.Errorf("RunOne() = %s, reports (-want +got):\n%s", out.Action, diff)
	}
}

func TestNewCommandHookRejects(t *testing.T) {
	tests := []struct {
		spec CommandSpec
		want string
	}{
		{CommandSpec{Event: "PreToolCall", Command: "true"}, `unknown event "PreToolCall"`},
		{CommandSpec{Event: "PreToolUse", Command: "  "}, "empty command"},
		{CommandSpec{Event: "PreToolUse", Command: "true", Matcher: "Bash("}, "not a valid regular expression"},
		{CommandSpec{Event: "PreToolUse", Command: "true", Timeout: -time.Second}, "negative timeout"},
	}
	for _, tt := range tests {
		_, err := NewCommandHook(tt.spec, CommandOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewCommandHook(%+v) error = %v, want %q", tt.spec, err, tt.want)
		}
	}
}

func TestCommandHooksNames(t *testing.T) {
	regs, err := CommandHooks([]CommandSpec{
		{Event: "PreToolUse", Matcher: "Bash", Command: "a"},
		{Name: "fmt", Event: "PostToolUse", Command: "b", Timeout: 5 * time.Second},
	}, CommandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name    string
		Events  []string
		Fail    FailPolicy
		Timeout time.Duration
		Detail  string
	}
	var got []row
	for _, r := range regs {
		got = append(got, row{r.Info.Name, r.Info.Events, r.Fail, r.Timeout, r.Detail})
	}
	want := []row{
		{"command.PreToolUse.1", []string{plugins.EventToolExecuteBefore}, FailOpen, DefaultCommandTimeout, "PreToolUse[Bash]: a"},
		{"fmt", []string{plugins.EventToolExecuteAfter}, FailOpen, 5 * time.Second, "PostToolUse: b"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CommandHooks() mismatch (-want +got):\n%s", diff)
	}
}

// A command hook's matcher is the tools it declares, so that the pipeline
// skips it as it skips any hook for a tool it does not handle.
func TestCommandHookMatcherDeclaresTools(t *testing.T) {
	tests := []struct {
		spec CommandSpec
		want map[string][]string
	}{
		{CommandSpec{Event: ClaudePreToolUse, Matcher: "Edit|Write"}, map[string][]string{plugins.EventToolExecuteBefore: {plugins.ToolWrite, plugins.ToolEdit}}},
		{CommandSpec{Event: ClaudePostToolUse, Matcher: "Bash"}, map[string][]string{plugins.EventToolExecuteAfter: {plugins.ToolBash}}},
		// MCP tools are named by the servers: a matcher that may match one
		// declares the prefix, and the hook matches the name itself.
		{CommandSpec{Event: ClaudePreToolUse, Matcher: "mcp__.*"}, map[string][]string{plugins.EventToolExecuteBefore: {"mcp__*"}}},
		{CommandSpec{Event: ClaudePreToolUse, Matcher: "mcp__github__.*|Bash"}, map[string][]string{plugins.EventToolExecuteBefore: {plugins.ToolBash, "mcp__github__*"}}},
		{CommandSpec{Event: ClaudePreToolUse, Matcher: ".*"}, map[string][]string{plugins.EventToolExecuteBefore: append(plugins.ToolNames(), "mcp__*")}},
		{CommandSpec{Event: ClaudePreToolUse, Matcher: "*"}, nil},
		{CommandSpec{Event: ClaudePreToolUse}, nil},
		{CommandSpec{Event: "Stop", Matcher: "Bash"}, nil},
	}
	for _, tt := range tests {
		tt.spec.Name, tt.spec.Command = "h", "true"
		h, err := NewCommandHook(tt.spec, CommandOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info, _ := h.Info(context.Background())
		if diff := cmp.Diff(tt.want, info.Tools, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("NewCommandHook(%s %q).Info().Tools mismatch (-want +got):\n%s", tt.spec.Event, tt.spec.Matcher, diff)
		}
	}
}

// TestCommandHookOutputIsBounded runs a real command hook that prints
// without end. The bound holds while the output is read: the hook is
// stopped as soon as it passes the limit (its failure policy then decides),
// and the host's own allocation stays a few times the limit, where the
// unbounded reader once took gigabytes.
func TestCommandHookOutputIsBounded(t *testing.T) {
	for _, tc := range []struct{ name, command, stream string }{
		{"stdout", "yes", "stdout"},
		{"stderr", "yes >&2", "stderr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			// The timeout is far beyond the milliseconds a megabyte of `yes`
			// takes: only the output limit ends this run in time.
			got := runCommand(t, CommandSpec{Event: "PreToolUse", Command: tc.command, Timeout: 30 * time.Second, Fail: FailClosed}, dir, bashEvent("ls"))
			runtime.ReadMemStats(&after)
			if got.Action != plugins.Block || len(got.Reports) != 1 || got.Reports[0].TimedOut {
				t.Fatalf("outcome = %+v, want a block from the closed policy, not a timeout", got)
			}
			want := tc.stream + " passed the output limit of 1 MiB, so the hook was stopped"
			if !strings.Contains(got.Reports[0].Error, want) || !strings.Contains(got.Reason, want) {
				t.Errorf("error = %q, reason = %q, want both to say %q", got.Reports[0].Error, got.Reason, want)
			}
			t.Logf("%s: allocated %d KiB while the hook ran", tc.command, (after.TotalAlloc-before.TotalAlloc)>>10)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("the hook's run allocated %d MiB, want at most 16 MiB for a 1 MiB limit", alloc>>20)
			}
		})
	}
}
