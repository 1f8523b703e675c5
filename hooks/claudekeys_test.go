package hooks

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/plugins"
)

func bashCall(cmd string) plugins.Event {
	return plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "s1", Tool: plugins.ToolBash, Args: map[string]any{"command": cmd}}
}

func TestIfNarrowsAToolHook(t *testing.T) {
	project := t.TempDir()
	spec := CommandSpec{Event: "PreToolUse", Matcher: "Bash", If: "Bash(git push*)", Command: "cat >/dev/null; echo no pushing >&2; exit 2"}
	if out := runCommand(t, spec, project, bashCall("git push origin main")); out.Action != plugins.Block {
		t.Errorf("git push: %s, want block", out.Action)
	}
	if out := runCommand(t, spec, project, bashCall("git status")); out.Action != plugins.Allow || len(out.Reports) != 1 || out.Reports[0].Action != plugins.Allow {
		t.Errorf("git status: %+v, want allow", out)
	}
	// The legacy prefix form and a file pattern.
	for _, tc := range []struct {
		rule string
		ev   plugins.Event
		want bool
	}{
		{"Bash(npm run:*)", bashCall("npm run test"), true},
		{"Bash(npm run:*)", bashCall("npx jest"), false},
		{"Edit(*.go)", plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolEdit, Args: map[string]any{"path": "a/b.go"}}, true},
		{"Edit(*.go)", plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolEdit, Args: map[string]any{"path": "a/b.md"}}, false},
		{"Write", plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolEdit, Args: map[string]any{"path": "a"}}, false},
	} {
		r, err := parseIf(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.matches(tc.ev); got != tc.want {
			t.Errorf("%s on %v = %v, want %v", tc.rule, tc.ev.Args, got, tc.want)
		}
	}
	if _, err := NewCommandHook(CommandSpec{Name: "x", Event: "PreToolUse", If: "Bash(", Command: "true"}, CommandOptions{}); err == nil {
		t.Error("a malformed if was accepted")
	}
}

func TestOnceRunsOncePerSession(t *testing.T) {
	project := t.TempDir()
	log := filepath.Join(project, "runs")
	p := commandPipeline(t, CommandSpec{Event: "PreToolUse", Once: true, Command: "cat >/dev/null; echo x >> " + log}, project)
	for _, s := range []string{"a", "a", "b", "a"} {
		ev := bashCall("ls")
		ev.SessionID, ev.Cwd = s, project
		if _, err := p.Run(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(log)
	if n := strings.Count(string(b), "x"); n != 2 {
		t.Errorf("a once hook ran %d times over two sessions, want 2", n)
	}
}

func TestAsyncHookDoesNotHoldTheEvent(t *testing.T) {
	project := t.TempDir()
	release := filepath.Join(project, "release")
	done := filepath.Join(project, "done")
	// The hook waits for the test's release file and would block; async,
	// the event is allowed at once and the hook finishes afterwards.
	spec := CommandSpec{Event: "PreToolUse", Async: true, Timeout: time.Minute,
		Command: "cat >/dev/null; while [ ! -f " + release + " ]; do sleep 0.02; done; touch " + done + "; echo nope >&2; exit 2"}
	out := runCommand(t, spec, project, bashCall("ls"))
	if out.Action != plugins.Allow {
		t.Fatalf("async hook: %s, want allow at once", out.Action)
	}
	if _, err := os.Stat(done); err == nil {
		t.Fatal("the async hook had finished before the event went on")
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a failure guard only
	for {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the async hook never ran to its end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHTTPHook(t *testing.T) {
	var gotBody, gotAuth, gotType string
	status, answer := http.StatusOK, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotAuth, gotType = string(b), r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	defer srv.Close()
	project := t.TempDir()
	spec := CommandSpec{Name: "web", Event: "PreToolUse", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${TOK} $SECRET_OTHER"},
		AllowedEnvVars: []string{"TOK"}}
	run := func() Outcome {
		h, err := NewCommandHook(spec, CommandOptions{ProjectDir: project, Env: []string{"TOK=t1", "SECRET_OTHER=s2"}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPipeline([]Registered{h.Registered()}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ev := bashCall("rm -rf /")
		ev.Cwd = project
		out, err := p.Run(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	answer = `{"decision": "block", "reason": "not that"}`
	if out := run(); out.Action != plugins.Block || !strings.Contains(out.Reason, "not that") {
		t.Errorf("a 200 block answer: %+v", out)
	}
	if !strings.Contains(gotBody, `"hook_event_name":"PreToolUse"`) || !strings.Contains(gotBody, `"command":"rm -rf /"`) || gotType != "application/json" {
		t.Errorf("posted %q (%s), want the event's JSON", gotBody, gotType)
	}
	if gotAuth != "Bearer t1" {
		t.Errorf("Authorization = %q, want only the allowed variable expanded", gotAuth)
	}

	answer = ""
	if out := run(); out.Action != plugins.Allow {
		t.Errorf("an empty 200: %s, want allow", out.Action)
	}

	// A failing endpoint is a failed hook: its policy (open) allows, and
	// the report says what it answered.
	status, answer = http.StatusInternalServerError, "boom"
	out := run()
	if out.Action != plugins.Allow || len(out.Reports) != 1 || !strings.Contains(out.Reports[0].Error, "500") {
		t.Errorf("a 500: %+v, want allow with the failure reported", out)
	}

	// An answer past the output bound is refused, not read whole.
	status, answer = http.StatusOK, strings.Repeat("x", maxCommandOutput+10)
	out = run()
	if len(out.Reports) != 1 || !strings.Contains(out.Reports[0].Error, "output limit") {
		t.Errorf("a huge answer: %+v, want the limit reported", out.Reports)
	}
}

func TestHTTPHookTimeout(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hold)
	out := runCommand(t, CommandSpec{Event: "PreToolUse", URL: srv.URL, Timeout: 200 * time.Millisecond}, t.TempDir(), bashCall("ls"))
	if out.Action != plugins.Allow || len(out.Reports) != 1 || !out.Reports[0].TimedOut {
		t.Errorf("a hanging endpoint: %+v, want the timeout reported and the event allowed (open)", out)
	}
}
