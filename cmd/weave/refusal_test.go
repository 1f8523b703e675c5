package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

// requestToolResults returns the tool results one model request carries,
// in order.
func requestToolResults(t *testing.T, req modeltest.Request) []string {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := req.Decode(&body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range body.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

// A refusal the model reads names its real cause, exactly: the capability
// matrix when the role's row lacks the tool, the hook (and its words) when
// a hook blocked the call, never one for the other.
func TestRefusalsNameTheirCause(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("thread writes", func(t *testing.T) {
		dir := project(t, nil)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "task", Args: `{"agent":"thread","prompt":"write x.txt"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "write", Args: `{"path":"x.txt","content":"no"}`}}},
			modeltest.Turn{Text: "I may not write."},
			modeltest.Turn{Text: "Thread could not write."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "write x.txt")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
			t.Error("thread wrote x.txt")
		}
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d model requests, want 4", len(reqs))
		}
		want := "denied by the capability matrix (thread has no write)"
		if got := requestToolResults(t, reqs[2]); len(got) != 1 || got[0] != want {
			t.Errorf("thread's model reads %q, want exactly %q", got, want)
		}
		// The person reads the same cause, once.
		if !strings.Contains(errOut, "write "+want+"\n") || strings.Contains(errOut, "denied: denied") {
			t.Errorf("stderr = %q, want the write shown as %q", errOut, want)
		}
	})

	t.Run("a hook blocks bash", func(t *testing.T) {
		dir := project(t, nil)
		hook := `if grep -q "rm -rf"; then echo "rm -rf is not allowed here" >&2; exit 2; fi`
		cfg := "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: " + strconvQuote(hook) + "\n"
		if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "bash", Args: `{"command":"rm -rf keep.txt"}`}}},
			modeltest.Turn{Text: "The hook stopped me."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "clean up")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
			t.Errorf("the blocked command ran: %v", err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model requests, want 2", len(reqs))
		}
		want := "blocked by hook command.PreToolUse.1: rm -rf is not allowed here"
		got := requestToolResults(t, reqs[1])
		if len(got) != 1 || got[0] != want {
			t.Errorf("the model reads %q, want exactly %q", got, want)
		}
		for _, wrong := range []string{"capability matrix", "may not use", "capability row"} {
			if strings.Contains(strings.Join(got, "\n")+errOut, wrong) {
				t.Errorf("a hook's block reads as the gate's (%q):\nmodel: %q\nstderr: %s", wrong, got, errOut)
			}
		}
		if !strings.Contains(errOut, "bash "+want+"\n") {
			t.Errorf("stderr = %q, want the bash call shown as %q", errOut, want)
		}
	})
}
