package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

// pastedClaudeHooks is a Claude Code hooks file as plugins ship it (the
// shape of an idle-notification plugin's hooks.json), pasted into Weave's
// config unchanged: events Weave does not fire, the if and async keys, an
// http handler and a prompt hook.
const pastedClaudeHooks = `{
  "hooks": {
    "Notification": [
      {"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/notify.sh", "async": true, "timeout": 10}]}
    ],
    "SubagentStop": [
      {"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/done.sh"}]}
    ],
    "TeammateIdle": [
      {"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/idle.sh", "async": true}]}
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [
        {"type": "command", "if": "Bash(git push*)", "command": "echo no pushing >&2; exit 2", "statusMessage": "checking the push"},
        {"type": "http", "url": "http://127.0.0.1:9/hooks", "headers": {"Authorization": "Bearer $HOOK_TOKEN"}, "allowedEnvVars": ["HOOK_TOKEN"], "timeout": 5}
      ]}
    ],
    "Stop": [
      {"hooks": [{"type": "prompt", "prompt": "Is the work done? $ARGUMENTS"}]}
    ],
    "PostCompact": [
      {"hooks": [{"type": "command", "command": "true", "once": true}]}
    ]
  }
}`

// claudeHooksConfig is config.yaml holding hooks (JSON is YAML).
func claudeHooksConfig(t *testing.T, dir, hooksJSON string) {
	t.Helper()
	var whole struct {
		Hooks json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(hooksJSON), &whole); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, "hooks: "+string(whole.Hooks)+"\n")
}

func TestPastedClaudeHooksFileLoadsWithWarnings(t *testing.T) {
	dir := project(t, nil)
	claudeHooksConfig(t, dir, pastedClaudeHooks)
	code, out, errOut := runWeave(t, weaveBin(t), dir, nil, "hooks", "list")
	if code != 0 {
		t.Fatalf("weave hooks list: exit %d, want 0 (a pasted Claude hooks file loads)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{
		"warning: hooks.TeammateIdle: Weave does not fire this event",
		"warning: hooks.Stop[0].hooks[0]: Weave does not run prompt hooks",
	} {
		if strings.Count(errOut, want) != 1 {
			t.Errorf("stderr does not say once %q:\n%s", want, errOut)
		}
	}
	// What runs is listed: the two PreToolUse hooks, SubagentStop and
	// PostCompact; Notification either runs or is warned about.
	for _, want := range []string{"command.PreToolUse.", "command.SubagentStop.", "command.PostCompact."} {
		if !strings.Contains(out, want) {
			t.Errorf("hooks list lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "command.PreToolUse.") != 2 || strings.Contains(out, "command.TeammateIdle") {
		t.Errorf("hooks list runs the wrong hooks:\n%s", out)
	}
	if !strings.Contains(out, "command.Notification.") && !strings.Contains(errOut, "warning: hooks.Notification: Weave does not fire this event") {
		t.Errorf("Notification neither runs nor is warned about\nstdout: %s\nstderr: %s", out, errOut)
	}
}

// hookInputs reads the JSON lines a recording hook appended to path.
func hookInputs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v: %s", path, err, line)
		}
		out = append(out, m)
	}
	return out
}

// recordHook is a command hook that appends its input to $CLAUDE_PROJECT_DIR/<name>.
func recordHook(name string) string {
	return `{"type": "command", "command": "cat >> \"$CLAUDE_PROJECT_DIR/` + name + `\"; echo >> \"$CLAUDE_PROJECT_DIR/` + name + `\""}`
}

// chatRequestText is every message content of a recorded model request.
func chatRequestText(t *testing.T, r modeltest.Request) string {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := r.Decode(&body); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range body.Messages {
		b.WriteString(m.Role + ": " + m.Content + "\n")
	}
	return b.String()
}

func TestClaudeHooksInChat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := weaveBin(t)

	t.Run("SessionStart context reaches the model's first request", func(t *testing.T) {
		dir := project(t, nil)
		claudeHooksConfig(t, dir, `{"hooks": {
			"SessionStart": [{"hooks": [
				{"type": "command", "command": "cat > /dev/null; echo 'branch: feature-42 (from SessionStart)'"},
				{"type": "command", "command": "cat > /dev/null; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SessionStart\", \"additionalContext\": \"CONTEXT-FROM-JSON-7\"}}'"}
			]}],
			"SessionEnd": [{"hooks": [`+recordHook("end.jsonl")+`]}]
		}}`)
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "Noted."})
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "hello")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model requests, want 1", len(reqs))
		}
		text := chatRequestText(t, reqs[0])
		for _, want := range []string{"branch: feature-42 (from SessionStart)", "CONTEXT-FROM-JSON-7"} {
			if !strings.Contains(text, want) {
				t.Errorf("the first request lacks the SessionStart context %q:\n%s", want, text)
			}
		}
		ends := hookInputs(t, filepath.Join(dir, "end.jsonl"))
		if len(ends) != 1 || ends[0]["hook_event_name"] != "SessionEnd" || ends[0]["cwd"] == "" {
			t.Errorf("SessionEnd inputs = %v, want one, with cwd", ends)
		}
	})

	t.Run("UserPromptSubmit fires for the person's prompt only", func(t *testing.T) {
		dir := project(t, nil)
		if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		claudeHooksConfig(t, dir, `{"hooks": {"UserPromptSubmit": [{"hooks": [`+recordHook("prompts.jsonl")+`]}]}}`)
		srv := modeltest.NewServer(t,
			modeltest.Turn{Text: "Reading it.", ToolCalls: []modeltest.ToolCall{{ID: "call_r1", Name: "read", Args: `{"path":"hello.txt"}`}}},
			modeltest.Turn{Text: "It says hi."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "what does hello.txt say?")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		got := hookInputs(t, filepath.Join(dir, "prompts.jsonl"))
		if len(got) != 1 {
			t.Fatalf("UserPromptSubmit ran %d times, want once (the person's prompt, not the model's text nor the continuation): %v", len(got), got)
		}
		in := got[0]
		if in["prompt"] != "what does hello.txt say?" || in["cwd"] == "" || in["cwd"] == nil || in["session_id"] == "" ||
			in["transcript_path"] == "" || in["hook_event_name"] != "UserPromptSubmit" || in["permission_mode"] == nil {
			t.Errorf("UserPromptSubmit input = %v", in)
		}
	})

	t.Run("SubagentStart and SubagentStop around a delegation, no UserPromptSubmit for its prompt", func(t *testing.T) {
		dir := project(t, nil)
		if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		claudeHooksConfig(t, dir, `{"hooks": {
			"SubagentStart": [{"matcher": "thread", "hooks": [`+recordHook("start.jsonl")+`]}, {"matcher": "pattern", "hooks": [`+recordHook("other.jsonl")+`]}],
			"SubagentStop": [{"matcher": "thread", "hooks": [`+recordHook("stop.jsonl")+`]}],
			"UserPromptSubmit": [{"hooks": [`+recordHook("prompts.jsonl")+`]}]
		}}`)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "call_task_5", Name: "task", Args: `{"agent":"thread","prompt":"what is in hello.txt?"}`}}},
			modeltest.Turn{Text: "It says hi."},
			modeltest.Turn{Text: "hello.txt says hi."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "ask thread about hello.txt")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		start := hookInputs(t, filepath.Join(dir, "start.jsonl"))
		if len(start) != 1 || start[0]["agent_type"] != "thread" || start[0]["agent_id"] != "call_task_5" || start[0]["hook_event_name"] != "SubagentStart" {
			t.Errorf("SubagentStart inputs = %v, want one for thread", start)
		}
		stop := hookInputs(t, filepath.Join(dir, "stop.jsonl"))
		if len(stop) != 1 || stop[0]["agent_type"] != "thread" || stop[0]["last_assistant_message"] != "It says hi." {
			t.Errorf("SubagentStop inputs = %v, want one with thread's answer", stop)
		}
		if other := hookInputs(t, filepath.Join(dir, "other.jsonl")); len(other) != 0 {
			t.Errorf("a SubagentStart hook matching pattern ran for thread: %v", other)
		}
		if prompts := hookInputs(t, filepath.Join(dir, "prompts.jsonl")); len(prompts) != 1 || prompts[0]["prompt"] != "ask thread about hello.txt" {
			t.Errorf("UserPromptSubmit inputs = %v, want the person's prompt only, not the delegation's", prompts)
		}
	})

	t.Run("tool_use_id is the model's call id; PostToolUseFailure fires on a failed call", func(t *testing.T) {
		dir := project(t, nil)
		claudeHooksConfig(t, dir, `{"hooks": {
			"PreToolUse": [{"matcher": "Read", "hooks": [`+recordHook("pre.jsonl")+`]}],
			"PostToolUse": [{"matcher": "Read", "hooks": [`+recordHook("post.jsonl")+`]}],
			"PostToolUseFailure": [{"matcher": "Read", "hooks": [`+recordHook("failure.jsonl")+`]}]
		}}`)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "call_missing_77", Name: "read", Args: `{"path":"missing.txt"}`}}},
			modeltest.Turn{Text: "It is not there."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "read missing.txt")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		pre := hookInputs(t, filepath.Join(dir, "pre.jsonl"))
		if len(pre) != 1 || pre[0]["tool_use_id"] != "call_missing_77" || pre[0]["tool_name"] != "Read" {
			t.Errorf("PreToolUse inputs = %v, want one with tool_use_id call_missing_77", pre)
		}
		fail := hookInputs(t, filepath.Join(dir, "failure.jsonl"))
		if len(fail) != 1 || fail[0]["hook_event_name"] != "PostToolUseFailure" || fail[0]["tool_use_id"] != "call_missing_77" || fail[0]["error"] == "" {
			t.Errorf("PostToolUseFailure inputs = %v, want one for the failed read, with its error", fail)
		}
		if post := hookInputs(t, filepath.Join(dir, "post.jsonl")); len(post) != 0 {
			t.Errorf("PostToolUse ran on a failed call: %v", post)
		}
	})

	t.Run("an http hook blocks a PreToolUse", func(t *testing.T) {
		dir := project(t, nil)
		var mu sync.Mutex
		var bodies []map[string]any
		var auth []string
		hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			mu.Lock()
			bodies = append(bodies, m)
			auth = append(auth, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Other"))
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "writes go through review (http hook)"}}`)
		}))
		defer hookSrv.Close()
		claudeHooksConfig(t, dir, `{"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
			{"type": "http", "url": "`+hookSrv.URL+`/pre", "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "[$OTHER_VAR]"}, "allowedEnvVars": ["HOOK_TOKEN"], "timeout": 10}
		]}]}}`)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "call_w1", Name: "write", Args: `{"path":"x.txt","content":"no"}`}}},
			modeltest.Turn{Text: "Blocked."},
		)
		env := append(chatEnv(t, srv), "HOOK_TOKEN=tok-123", "OTHER_VAR=not-named")
		code, out, errOut := runWeave(t, bin, dir, env, "chat", "-p", "write x.txt")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
			t.Error("the write ran though the http hook denied it")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 1 || bodies[0]["hook_event_name"] != "PreToolUse" || bodies[0]["tool_name"] != "Write" || bodies[0]["tool_use_id"] != "call_w1" {
			t.Errorf("the http hook got %v, want one PreToolUse for the write", bodies)
		}
		if len(auth) != 1 || auth[0] != "Bearer tok-123|[]" {
			t.Errorf("headers = %q, want the named variable expanded and the other not", auth)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || !strings.Contains(chatRequestText(t, reqs[1]), "writes go through review (http hook)") {
			t.Errorf("the model was not told why its write was refused")
		}
	})
}

func TestClaudeHooksInStartWork(t *testing.T) {
	// A task fails for good: the plan pauses and the Notification hook is
	// told a person is needed; the ticked first task is a TaskCompleted.
	plan := "# Half\n\n## TODOs\n\n- [ ] 1. Fine\n  ```sh\n  true\n  ```\n- [ ] 2. Broken\n  ```sh\n  exit 7\n  ```\n"
	dir := project(t, map[string]string{"half": plan})
	claudeHooksConfig(t, dir, `{"hooks": {
		"Notification": [{"matcher": "plan_paused", "hooks": [`+recordHook("notes.jsonl")+`]}, {"matcher": "permission_prompt", "hooks": [`+recordHook("perm.jsonl")+`]}],
		"TaskCompleted": [{"hooks": [`+recordHook("done.jsonl")+`]}]
	}}`)
	code, out, errOut := runWeave(t, weaveBin(t), dir, nil, "start-work", "half")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFailed, out, errOut)
	}
	notes := hookInputs(t, filepath.Join(dir, "notes.jsonl"))
	if len(notes) != 1 || notes[0]["hook_event_name"] != "Notification" || notes[0]["notification_type"] != "plan_paused" ||
		!strings.Contains(fmt.Sprint(notes[0]["message"]), "plan half paused") || notes[0]["cwd"] == "" || notes[0]["session_id"] == "" {
		t.Errorf("Notification inputs = %v, want one saying the plan paused", notes)
	}
	if perm := hookInputs(t, filepath.Join(dir, "perm.jsonl")); len(perm) != 0 {
		t.Errorf("a permission_prompt Notification hook ran on a pause: %v", perm)
	}
	done := hookInputs(t, filepath.Join(dir, "done.jsonl"))
	if len(done) != 1 || done[0]["hook_event_name"] != "TaskCompleted" || done[0]["task_id"] != "half#1" || done[0]["task_subject"] != "Fine" {
		t.Errorf("TaskCompleted inputs = %v, want one for task 1", done)
	}
}
