//go:build linux

package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/proctest"
	"github.com/weavehq/weave/plugins"
)

func running(pid int) bool { return !proctest.Gone(pid) }

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}

func TestCommandHookBackgroundChildDoesNotOutliveTheHook(t *testing.T) {
	project := t.TempDir()
	spec := CommandSpec{Event: ClaudePreToolUse, Command: `(sleep 300; echo late >> late.txt) & echo $! > bg.pid; echo '{}'`}
	out := runCommand(t, spec, project, bashEvent("ls"))
	if out.Blocked() {
		t.Fatalf("Run = %+v, want allow", out)
	}
	pid := readPID(t, filepath.Join(project, "bg.pid"))
	deadline := time.Now().Add(time.Minute) // a failure guard only
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the hook's background child %d is still running after the hook returned", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCommandHookStoppedByItsSet(t *testing.T) {
	project := t.TempDir()
	set := proc.NewSet(100*time.Millisecond, nil)
	h, err := NewCommandHook(CommandSpec{Name: "slow", Event: ClaudePreToolUse,
		Command: `trap '' TERM; echo $$ > hook.pid; sleep 300`}, CommandOptions{ProjectDir: project, Procs: set})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := h.Handle(context.Background(), plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolBash, Cwd: project})
		done <- err
	}()
	pidFile := filepath.Join(project, "hook.pid")
	for deadline := time.Now().Add(time.Minute); ; {
		if b, _ := os.ReadFile(pidFile); len(b) > 0 && b[len(b)-1] == '\n' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hook never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := set.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if pid := readPID(t, pidFile); running(pid) {
		t.Errorf("Close returned with the hook %d still running", pid)
	}
	if err := <-done; err == nil {
		t.Error("Handle of a hook killed by shutdown = nil error, want an error")
	}
}

// TestCommandHookEnvironmentHasNoSecrets: a command hook gets the user's
// environment, as Claude Code's do, less weave's own credentials.
func TestCommandHookEnvironmentHasNoSecrets(t *testing.T) {
	project := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/h", "EDITOR=vi",
		"WEAVE_BUS_TOKEN=fake-bus-token", "OPENAI_API_KEY=fake-key", "DB_PASS=fake-pass", "MYSQL_PWD=fake-pwd",
		"SENTRY_DSN=https://fake-dsn@sentry.example/1", "DATABASE_URL=postgres://app:fake-url-pass@db/app"}
	h, err := NewCommandHook(CommandSpec{Name: "env", Event: ClaudePreToolUse, Command: "env > env.txt"},
		CommandOptions{ProjectDir: project, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(context.Background(), bashEvent("ls")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(project, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, s := range []string{"fake-bus-token", "fake-key"} {
		if strings.Contains(got, s) {
			t.Errorf("the hook's environment holds the secret %q:\n%s", s, got)
		}
	}
	for _, s := range []string{"EDITOR=vi", "DB_PASS=fake-pass", "CLAUDE_PROJECT_DIR=" + project} {
		if !strings.Contains(got, s) {
			t.Errorf("the hook's environment lacks %q:\n%s", s, got)
		}
	}
}
