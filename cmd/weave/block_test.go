package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hook's block reaches the person as the hook's decision, once, in its
// own words, and the task is not tried again.
func TestHookBlockIsShownAsTheHooksAndNotRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Clean up\n  ```sh\n  rm -rf build\n  ```\n- [ ] 2. Deploy\n  ```sh\n  echo deploying\n  ```\n"
	dir := project(t, map[string]string{"p": plan})
	count := filepath.Join(dir, "asked")
	hook := `echo x >> ` + count + `; if grep -q "rm -rf"; then echo "rm -rf is not allowed in runbooks" >&2; exit 2; fi`
	cfg := "runbook:\n  retries: 3\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: " + strconvQuote(hook) + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "p", "--json")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFailed, out, errOut)
	}
	want := "blocked by command.PreToolUse.1: rm -rf is not allowed in runbooks"
	var failed []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type, Error string
			Retry       bool
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if ev.Type == "task.failed" {
			failed = append(failed, ev.Error)
			if ev.Retry {
				t.Errorf("a block is to be retried: %s", line)
			}
		}
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], want) {
		t.Errorf("task.failed errors = %q, want one starting %q", failed, want)
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 1 {
		t.Errorf("the hook was asked %d times, want once: a block is not retried", strings.Count(string(b), "x"))
	}
	if !strings.Contains(errOut, "task 1 (Clean up) "+want) {
		t.Errorf("stderr = %q, want the block in the hook's words", errOut)
	}
	for _, gate := range []string{"may not use", "This is a rule of the project, not a failure", "do not retry"} {
		if strings.Contains(out+errOut, gate) {
			t.Errorf("output holds %q, the gate's or the model's wording:\n%s\n%s", gate, out, errOut)
		}
	}
	if strings.Count(errOut, "rm -rf is not allowed in runbooks") != 1 {
		t.Errorf("stderr repeats the reason:\n%s", errOut)
	}
}

// A failure is named once: the task in the run's message, what went wrong
// in the cause, never "task 1 (X) failed: task 1 (X) ...".
func TestFailureMessagesDoNotRepeatThemselves(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"q": "# Q\n\n## TODOs\n\n- [ ] 1. Think hard\n  Just think.\n"})
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "q")
	if code != exitFailed {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	_, status, _ := runWeave(t, bin, dir, env, "status")
	for name, text := range map[string]string{"stdout": out, "stderr": errOut, "status": status} {
		if n := strings.Count(text, "task 1 (Think hard)"); n > 1 {
			t.Errorf("%s names the task %d times:\n%s", name, n, text)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.Count(line, "failed") > 1 {
				t.Errorf("%s: a line says failed twice: %q", name, line)
			}
		}
	}
	if !strings.Contains(errOut, "task 1 (Think hard) failed: no sh or bash blocks to run") {
		t.Errorf("stderr = %q, want the task named once with the cause", errOut)
	}
}
