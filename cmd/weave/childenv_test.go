package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What docs/hooks.md and docs/plugins.md promise each child process: a command hook
// gets the user's full environment (as Claude Code's hooks do), a runbook
// block gets it without secrets, and Bash's tool_input carries shell and
// errexit beyond Claude Code's fields.
func TestChildProcessesReceiveWhatTheDocsSay(t *testing.T) {
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Look\n  ```sh\n  echo \"block sees key=${ACME_API_KEY:-none}\"\n  ```\n"
	dir := project(t, map[string]string{"p": plan})
	hook := `cat > "$WEAVE_PROJECT_DIR/hook-input.json"; echo "${ACME_API_KEY:-none} $CLAUDE_PROJECT_DIR" > "$WEAVE_PROJECT_DIR/hook-env.txt"`
	cfg := "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: " + strconvQuote(hook) + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, []string{"ACME_API_KEY=sk-test-123"}, "", "--dir", dir, "start-work", "p")
	if r.code != 0 {
		t.Fatalf("start-work = %d\n%s\n%s", r.code, r.out, r.err)
	}
	env, err := os.ReadFile(filepath.Join(dir, "hook-env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(env)), "sk-test-123 "+dir; got != want {
		t.Errorf("command hook saw %q, want the user's key and the project dir %q", got, want)
	}
	if !strings.Contains(r.out, "block sees key=none") {
		t.Errorf("a runbook block saw a secret-looking variable:\n%s", r.out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "hook-input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		ToolName  string         `json:"tool_name"`
		ToolInput map[string]any `json:"tool_input"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("hook input %s: %v", b, err)
	}
	if in.ToolName != "Bash" || in.ToolInput["shell"] != "sh" || in.ToolInput["errexit"] != true || in.ToolInput["command"] == nil {
		t.Errorf("Bash tool_input = %s %v, want command, shell \"sh\" and errexit true", in.ToolName, in.ToolInput)
	}
}
