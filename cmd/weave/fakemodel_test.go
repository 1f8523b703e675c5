package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// startFakeModel runs `weave fakemodel args...` and returns its URL; it is
// stopped when the test ends.
func startFakeModel(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"fakemodel"}, args...)...)
	cmd.Env = cleanEnv(t)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		t.Fatalf("weave fakemodel printed %q, %v; want its URL", line, err)
	}
	return strings.TrimSpace(line)
}

// A newcomer tries the agents offline with the binary alone: `weave
// fakemodel` answers any agent, and a script's turns go to the agent and
// the tool result they are kept for, whatever else is asked first.
func TestFakeModelCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	env := func(url string) []string {
		return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(),
			"WEAVE_MODEL_PROVIDER=openai", "WEAVE_MODEL_NAME=fake", "WEAVE_MODEL_BASE_URL=" + url + "/v1"}
	}

	t.Run("the demo", func(t *testing.T) {
		url := startFakeModel(t, bin)
		code, out, errOut := runWeave(t, bin, project(t, nil), env(url), "chat", "-p", "hello")
		if code != 0 || !strings.Contains(out, "Hello from weave's fake model") {
			t.Errorf("chat -p against the demo = %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})

	t.Run("a script with kept and default turns", func(t *testing.T) {
		dir := project(t, nil)
		if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi from the file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(t.TempDir(), "turns.json")
		if err := os.WriteFile(script, []byte(`[
  {"agent": "loom", "match": "hello.txt say", "tool_calls": [{"name": "read", "args": {"path": "hello.txt"}}]},
  {"after_tool": "hi from the file", "text": "The file says hi."},
  {"default": true, "text": "Nothing scripted for that."}
]`), 0o644); err != nil {
			t.Fatal(err)
		}
		url := startFakeModel(t, bin, "--script", script, "--quiet")
		// An extra request first: the default answers it and shifts nothing.
		code, out, _ := runWeave(t, bin, dir, env(url), "chat", "-p", "hi there")
		if code != 0 || !strings.Contains(out, "Nothing scripted for that.") {
			t.Errorf("the unforeseen request = %d %q, want the default turn", code, out)
		}
		code, out, errOut := runWeave(t, bin, dir, env(url), "chat", "-p", "what does hello.txt say?")
		if code != 0 || !strings.Contains(out, "The file says hi.") {
			t.Errorf("loom's chat = %d\nstdout: %s\nstderr: %s\nwant the read, then the turn kept for its result", code, out, errOut)
		}
	})
}
