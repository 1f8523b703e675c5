package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/model/modeltest"
)

// bashTurns scripts a model that runs each command with bash, one call a
// turn, and then says done.
func bashTurns(cmds ...string) []modeltest.Turn {
	var turns []modeltest.Turn
	for _, c := range cmds {
		turns = append(turns, modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "bash", Args: `{"command":` + strconvQuote(c) + `}`}}})
	}
	return append(turns, modeltest.Turn{Text: "done"})
}

// toolResultsOf is every tool result the model read, in order: the last
// request carries them all.
func toolResultsOf(t *testing.T, srv *modeltest.Server) []string {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model requests")
	}
	return requestToolResults(t, reqs[len(reqs)-1])
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// A model scripted to run what the rules refuse, in chat -p where nobody
// can answer: the deny rule and the ask rule each refuse the call, named
// exactly, and the command never runs.
func TestPermissionRulesInPrint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("deny and ask", func(t *testing.T) {
		dir := project(t, nil)
		writeConfig(t, dir, "permissions:\n  deny: [\"Bash(git push:*)\"]\n  ask: [\"Bash(touch:*)\"]\n")
		srv := modeltest.NewServer(t, bashTurns("git push origin main; touch pushed", "touch asked", "echo fine > ran")...)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "go")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		want := []string{
			"denied by permission rule Bash(git push:*) (deny)",
			"denied: asked, no one to answer (rule Bash(touch:*))",
			"",
		}
		got := toolResultsOf(t, srv)
		if len(got) != 3 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("the model reads %q, want exactly %q", got, want[:2])
		}
		if exists(dir, "pushed") || exists(dir, "asked") {
			t.Error("a refused command ran")
		}
		if !exists(dir, "ran") {
			t.Error("the command no rule names did not run: rules must not refuse what they do not match")
		}
		if !strings.Contains(errOut, "bash "+want[0]+"\n") || !strings.Contains(errOut, "bash "+want[1]+"\n") {
			t.Errorf("stderr = %q, want both refusals shown", errOut)
		}
	})

	t.Run("a hook asks", func(t *testing.T) {
		dir := project(t, nil)
		hook := `if grep -q "touch"; then printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"makes files"}}'; fi`
		writeConfig(t, dir, "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: "+strconvQuote(hook)+"\n")
		srv := modeltest.NewServer(t, bashTurns("touch hooked", "echo fine > ran")...)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "go")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		want := "denied: asked, no one to answer (hook command.PreToolUse.1: needs approval: makes files)"
		if got := toolResultsOf(t, srv); len(got) != 2 || got[0] != want {
			t.Errorf("the model reads %q, want first exactly %q", got, want)
		}
		if exists(dir, "hooked") || !exists(dir, "ran") {
			t.Errorf("hooked made: %v (want false), ran made: %v (want true)", exists(dir, "hooked"), exists(dir, "ran"))
		}
	})

	t.Run("a PermissionRequest hook answers first", func(t *testing.T) {
		dir := project(t, nil)
		hook := `if grep -q "touch ok"; then printf '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'; else printf '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"only ok files"}}}'; fi`
		writeConfig(t, dir, "permissions:\n  ask: [\"Bash(touch:*)\"]\nhooks:\n  PermissionRequest:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: "+strconvQuote(hook)+"\n")
		srv := modeltest.NewServer(t, bashTurns("touch ok1", "touch bad")...)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "go")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		got := toolResultsOf(t, srv)
		want := "blocked by hook command.PermissionRequest.1: only ok files"
		if len(got) != 2 || strings.HasPrefix(got[0], "denied") || got[1] != want {
			t.Errorf("the model reads %q, want the first allowed and the second exactly %q", got, want)
		}
		if !exists(dir, "ok1") || exists(dir, "bad") {
			t.Errorf("ok1 made: %v (want true), bad made: %v (want false)", exists(dir, "ok1"), exists(dir, "bad"))
		}
	})

	t.Run("an allowed command does not carry another", func(t *testing.T) {
		dir := project(t, nil)
		writeConfig(t, dir, "permissions:\n  allow: [\"Bash(git status:*)\", \"Bash(echo *)\", \"Bash(touch allowed)\"]\n  defaultMode: default\n")
		srv := modeltest.NewServer(t, bashTurns(
			"touch allowed",
			"git status; touch pwned1",
			"git status && touch pwned2",
			"git status | touch pwned3",
			"git status $(touch pwned4)",
			"echo `touch pwned5`",
			"git status > pwned6",
			"touch pwned7",
		)...)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "go")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if !exists(dir, "allowed") {
			t.Errorf("the allowed command did not run; stderr:\n%s", errOut)
		}
		got := toolResultsOf(t, srv)
		for i := 1; i <= 7; i++ {
			name := "pwned" + string(rune('0'+i))
			if exists(dir, name) {
				t.Errorf("%s exists: a command past the allow rule ran", name)
			}
			if want := "denied: asked, no one to answer (defaultMode default: no allow rule matches)"; len(got) != 8 || got[i] != want {
				t.Errorf("call %d: the model reads %q, want %q", i, got, want)
				break
			}
		}
	})

	t.Run("a rule never widens a role", func(t *testing.T) {
		dir := project(t, nil)
		writeConfig(t, dir, "agents:\n  loom:\n    tools: [read, glob, grep, task]\npermissions:\n  allow: [\"Bash\", \"Write\", \"Edit(**)\"]\n  defaultMode: bypassPermissions\n")
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "bash", Args: `{"command":"touch widened"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "write", Args: `{"path":"w.txt","content":"x"}`}}},
			modeltest.Turn{Text: "done"},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "go")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		want := []string{
			"denied by the capability matrix (loom has no bash; config agents.loom.tools leaves it out)",
			"denied by the capability matrix (loom has no write; config agents.loom.tools leaves it out)",
		}
		if got := toolResultsOf(t, srv); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the model reads %q, want %q", got, want)
		}
		if exists(dir, "widened") || exists(dir, "w.txt") {
			t.Error("an allow rule widened loom's row")
		}
	})

	t.Run("rules from .claude/settings.json", func(t *testing.T) {
		dir := project(t, nil)
		if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		settings := `{"permissions": {"deny": ["Bash(rm:*)", "Read(.env)"], "additionalDirectories": ["../other"]},
  "hooks": {}}`
		if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.local.json"), []byte(`{"permissions": {"ask": ["Write(notes/**)"]}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{".env", "keep.txt"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("SECRET=1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "bash", Args: `{"command":"cd . && rm -f keep.txt"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "read", Args: `{"path":".env"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "write", Args: `{"path":"notes/a.md","content":"x"}`}}},
			modeltest.Turn{Text: "done"},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "go")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		want := []string{
			"denied by permission rule Bash(rm:*) (deny)",
			"denied by permission rule Read(.env) (deny)",
			"denied: asked, no one to answer (rule Write(notes/**))",
		}
		if got := toolResultsOf(t, srv); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the model reads %q, want %q", got, want)
		}
		if !exists(dir, "keep.txt") || exists(dir, "notes/a.md") {
			t.Error("a refused call ran")
		}
		for _, r := range srv.Requests() {
			if strings.Contains(string(r.Body), "SECRET=1") {
				t.Error("the .env file reached the model")
			}
		}
	})
}

// On a terminal the person answers: allow once, allow for the session
// (the same command is not asked again), and deny with a reason that
// the model reads in the tool result.
func TestPermissionAskOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	writeConfig(t, dir, "permissions:\n  ask: [\"Bash(touch:*)\"]\n")
	srv := modeltest.NewServer(t, append(bashTurns("touch one", "touch two", "touch two", "touch three"), modeltest.Turn{Text: "bye"})...)
	c := startChat(t, bin, dir, chatEnv(t, srv))
	c.err.waitFor(t, "the first prompt", chatPrompt, 1)
	c.say(t, "make files")
	c.err.waitFor(t, "the first question", askPrompt, 1)
	if !strings.Contains(c.err.String(), `permission needed: loom wants bash "touch one" (rule Bash(touch:*))`) {
		t.Errorf("the question does not say what asks; stderr:\n%s", c.err.String())
	}
	c.say(t, "y")
	c.err.waitFor(t, "the second question", askPrompt, 2)
	c.say(t, "a")
	c.err.waitFor(t, "the third question", askPrompt, 3)
	c.say(t, "n: not now, use make")
	c.out.waitFor(t, "the answer", "done", 1)
	c.err.waitFor(t, "the prompt after the turn", chatPrompt, 2)
	if _, err := c.tty.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	c.wait(t)

	for _, f := range []string{"one", "two"} {
		if !exists(dir, f) {
			t.Errorf("%s was allowed but not made", f)
		}
	}
	if exists(dir, "three") {
		t.Error("the denied command ran")
	}
	if n := strings.Count(c.err.String(), askPrompt); n != 3 {
		t.Errorf("asked %d times, want 3 (touch two allowed for the session)", n)
	}
	got := toolResultsOf(t, srv)
	want := "denied by the person asked (rule Bash(touch:*)): not now, use make"
	if len(got) != 4 || got[3] != want {
		t.Errorf("the model reads %q, want the last to be exactly %q", got, want)
	}
}

// With --ask-via bus the questions go to ask:<session>, where a peer with
// the token answers: an allow runs the call, a deny reaches the model with
// its reason; a peer without the token cannot even listen there; and a
// question nobody answers in time is denied.
func TestPermissionAskViaBus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	s := serveBus(t, "")
	ctx := context.Background()

	guest, err := jsonrpc.Dial(ctx, s.ws, jsonrpc.ClientInfo{Name: "guest", Version: "1"}, jsonrpc.WithClientID("guest"))
	if err != nil {
		t.Fatal(err)
	}
	defer guest.Close()
	if err := guest.Subscribe(ctx, "ask:*", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true, Result: json.RawMessage(`{"allow":true}`)}, nil
	}, jsonrpc.SubscribeOptions{}); err == nil {
		t.Fatal("a peer without the token subscribed to ask:*, where it could approve tool calls")
	}

	peer := dialPeer(t, s.ws, "approver")
	questions := make(chan busface.AskRequest, 8)
	hold := make(chan struct{})
	defer close(hold)
	if err := peer.Subscribe(ctx, "ask:*", func(hctx context.Context, m bus.Message) (bus.Ack, error) {
		var q busface.AskRequest
		if err := json.Unmarshal(m.Payload, &q); err != nil {
			return bus.Ack{}, err
		}
		questions <- q
		cmd, _ := q.Args["command"].(string)
		switch cmd {
		case "touch yes":
			return bus.Ack{Processed: true, Result: json.RawMessage(`{"allow":true}`)}, nil
		case "touch late":
			select {
			case <-hctx.Done():
			case <-hold:
			}
			return bus.Ack{Processed: true, Result: json.RawMessage(`{"allow":true}`)}, nil
		}
		return bus.Ack{Processed: true, Result: json.RawMessage(`{"allow":false,"reason":"not on a Friday"}`)}, nil
	}, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}

	dir := project(t, nil)
	writeConfig(t, dir, "permissions:\n  ask: [\"Bash(touch:*)\"]\n")
	srv := modeltest.NewServer(t, bashTurns("touch yes", "touch no", "touch late")...)
	env := append(chatEnv(t, srv), "XDG_RUNTIME_DIR="+os.Getenv("XDG_RUNTIME_DIR"))
	code, out, errOut := runWeave(t, bin, dir, env, "chat", "-p", "go", "--bus", s.ws, "--ask-via", "bus", "--ask-timeout", "2s")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	q := bustest.Recv(t, "the first question", questions)
	if q.Type != busface.AskRequestType || q.Tool != "bash" || q.Cause != "rule Bash(touch:*)" || q.Agent != "loom" || q.Session == "" {
		t.Errorf("question = %+v, want bash asked by rule Bash(touch:*) for loom", q)
	}
	got := toolResultsOf(t, srv)
	if len(got) != 3 {
		t.Fatalf("the model reads %q, want 3 results", got)
	}
	if strings.HasPrefix(got[0], "denied") || !exists(dir, "yes") {
		t.Errorf("the allowed call: %q, file made: %v", got[0], exists(dir, "yes"))
	}
	if want := "denied by bus peer approver (rule Bash(touch:*)): not on a Friday"; got[1] != want || exists(dir, "no") {
		t.Errorf("the denied call reads %q, want %q (file made: %v)", got[1], want, exists(dir, "no"))
	}
	if want := "denied: asked, no answer on ask:" + q.Session + " within 2s (rule Bash(touch:*))"; got[2] != want || exists(dir, "late") {
		t.Errorf("the unanswered call reads %q, want %q (file made: %v)", got[2], want, exists(dir, "late"))
	}
}
