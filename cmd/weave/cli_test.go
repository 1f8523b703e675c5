package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/host/run/runtest"
)

func project(t *testing.T, planFiles map[string]string) string {
	t.Helper()
	return runtest.NewProject(t, planFiles)
}

const okPlan = "# OK\n\n## TODOs\n\n- [ ] 1. Say hi\n  ```sh\n  echo hi\n  ```\n- [ ] 2. Check\n  ```sh verify\n  true\n  ```\n"

const failPlan = "# Fail\n\n## TODOs\n\n- [ ] 1. Break\n  ```sh\n  exit 7\n  ```\n"

func TestStartWorkExitCodes(t *testing.T) {
	tests := []struct {
		name  string
		plans map[string]string
		args  []string
		code  int
		// errHas is a piece of what the user must be told.
		errHas string
	}{
		{"done", map[string]string{"ok": okPlan}, []string{"start-work", "ok"}, exitOK, ""},
		{"task fails", map[string]string{"bad": failPlan}, []string{"start-work", "bad"}, exitFailed, "exited with status 7"},
		{"unknown plan", map[string]string{"ok": okPlan}, []string{"start-work", "nope"}, exitFailed, `no plan named "nope"`},
		{"several plans", map[string]string{"ok": okPlan, "bad": failPlan}, []string{"start-work"}, exitUsage, "name one"},
		{"too many args", map[string]string{"ok": okPlan}, []string{"start-work", "a", "b"}, exitUsage, "takes 0 to 1 arguments"},
		{"bad flag", map[string]string{"ok": okPlan}, []string{"start-work", "--nope"}, exitUsage, "unknown flag"},
		{"invalid plan", map[string]string{"empty": "# Empty\n"}, []string{"start-work", "empty"}, exitFailed, "error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, tc.plans)
			code, _, errOut := runCLI(t, append([]string{"--dir", dir}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tc.code, errOut)
			}
			if !strings.Contains(errOut, tc.errHas) {
				t.Errorf("stderr = %q, want it to mention %q", errOut, tc.errHas)
			}
		})
	}
}

func TestStartWorkNoProject(t *testing.T) {
	code, _, errOut := runCLI(t, "--dir", t.TempDir(), "start-work")
	if code != exitFailed || !strings.Contains(errOut, "weave init") {
		t.Errorf("start-work without .weave = %d %q, want 1 and advice to run weave init", code, errOut)
	}
}

func TestStartWorkJSONEvents(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	code, out, errOut := runCLI(t, "--dir", dir, "start-work", "--json", "ok")
	if code != exitOK {
		t.Fatalf("exit = %d, stderr %q", code, errOut)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev run.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q is not a JSON event: %v", line, err)
		}
		if ev.Plan != "ok" || ev.Time.IsZero() {
			t.Errorf("event %q lacks plan or time", line)
		}
		if strings.HasPrefix(ev.Type, "task.") && ev.Task == 0 {
			t.Errorf("task event %q lacks the task number", line)
		}
		if ev.Type == "note" {
			t.Errorf("note %q: what hooks say for the model is not an event for people", ev.Reason)
		}
		if ev.Type != run.EventWarning {
			types = append(types, ev.Type)
		}
	}
	// The verification reminder the built-in hook says when the last task
	// is done is for a model: it is no event of the run.
	want := "plan.started,task.started,task.output,task.output,task.done,task.started,task.output,task.done,plan.done"
	if got := strings.Join(types, ","); got != want {
		t.Errorf("event types = %s, want %s", got, want)
	}
}

func TestStartWorkPlainOutput(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	code, out, _ := runCLI(t, "--dir", dir, "start-work", "ok")
	if code != exitOK {
		t.Fatalf("exit = %d", code)
	}
	for _, want := range []string{"starting plan ok (0/2 done)", "[0/2] task 1: Say hi", "    hi", "[1/2] task 1 done", "plan ok done: 2/2 tasks"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanCommands(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan, "empty": "# Empty\n"})

	code, out, _ := runCLI(t, "--dir", dir, "plan", "list", "--json")
	if code != exitOK {
		t.Fatalf("plan list exit = %d", code)
	}
	var list []planEntry
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("plan list --json = %q: %v", out, err)
	}
	byName := map[string]planEntry{}
	for _, e := range list {
		byName[e.Name] = e
	}
	if e := byName["ok"]; e.Total != 2 || e.Completed != 0 || e.Complete {
		t.Errorf("ok entry = %+v, want 0/2 incomplete", e)
	}

	if code, out, _ := runCLI(t, "--dir", dir, "plan", "validate", "ok"); code != exitOK || !strings.Contains(out, "valid") {
		t.Errorf("validate ok = %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "--dir", dir, "plan", "validate", "empty"); code != exitFailed || !strings.Contains(errOut, "error") {
		t.Errorf("validate empty = %d %q, want exit 1 with errors", code, errOut)
	}
	if code, out, _ := runCLI(t, "--dir", dir, "plan", "show", "ok"); code != exitOK || !strings.Contains(out, "[ ] 1. Say hi") || !strings.Contains(out, "verify") {
		t.Errorf("plan show = %d %q", code, out)
	}
}

func TestInitThenStartWork(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "--dir", dir, "init")
	if code != exitOK {
		t.Fatalf("init = %d %q", code, errOut)
	}
	for _, f := range []string{".weave/config.yaml", ".weave/.gitignore", ".weave/plans/hello-weave.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("init did not create %s: %v", f, err)
		}
	}
	// A second init keeps what is there.
	if code, out2, _ := runCLI(t, "--dir", dir, "init"); code != exitOK || !strings.Contains(out2, "kept") {
		t.Errorf("second init = %d %q; want files kept", code, out2)
	}
	_ = out
	if code, _, errOut := runCLI(t, "--dir", dir, "start-work"); code != exitOK {
		t.Fatalf("start-work on the sample plan = %d %q", code, errOut)
	}
	code, out, _ = runCLI(t, "--dir", dir, "status", "--json")
	var st run.ProjectStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != exitOK {
		t.Fatalf("status --json = %d %q: %v", code, out, err)
	}
	if len(st.Plans) != 1 || !st.Plans[0].Complete {
		t.Errorf("status = %+v, want the sample plan complete", st)
	}
}

func TestStatusShowsPausedPlanAndError(t *testing.T) {
	dir := project(t, map[string]string{"bad": failPlan})
	if code, _, _ := runCLI(t, "--dir", dir, "start-work", "bad"); code != exitFailed {
		t.Fatalf("start-work exit = %d, want 1", code)
	}
	code, out, _ := runCLI(t, "--dir", dir, "status")
	if code != exitOK || !strings.Contains(out, "paused") || !strings.Contains(out, "exited with status 7") {
		t.Errorf("status = %d %q, want the plan paused with its error", code, out)
	}
}

func TestLiveModelView(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	m := liveModel{tail: 2, width: 80, now: func() time.Time { return now }}
	step := func(ev run.Event) {
		nm, _ := m.apply(ev)
		m = nm.(liveModel)
	}
	step(run.Event{Type: run.EventPlanStarted, Plan: "demo", Completed: 3, Total: 5})
	step(run.Event{Type: run.EventTaskStarted, Plan: "demo", Task: 4, Title: "Build it", Completed: 3, Total: 5, Time: now.Add(-2500 * time.Millisecond)})
	for _, l := range []string{"one", "two", "three"} {
		step(run.Event{Type: run.EventTaskOutput, Plan: "demo", Task: 4, Output: l})
	}
	got := m.View()
	for _, want := range []string{"demo", "3/5", "▸ 4. Build it", "2.5s", "│ two", "│ three"} {
		if !strings.Contains(got, want) {
			t.Errorf("View() = %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "│ one") {
		t.Errorf("View() = %q, shows more than the last 2 output lines", got)
	}
	step(run.Event{Type: run.EventTaskDone, Plan: "demo", Task: 4, Completed: 4, Total: 5})
	if got := m.View(); strings.Contains(got, "Build it") || !strings.Contains(got, "4/5") {
		t.Errorf("View() after task.done = %q, want no current task and 4/5", got)
	}
}

func TestHooksListAndTest(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	cfg := `hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: 'grep -q "rm -rf" && { echo "no rm -rf here" >&2; exit 2; }; exit 0'
disabled_hooks: [weave.rules-injector]
`
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "--dir", dir, "hooks", "list", "--json")
	if code != exitOK {
		t.Fatalf("hooks list = %d %q", code, errOut)
	}
	var list []struct {
		Name     string `json:"name"`
		Source   string `json:"source"`
		Disabled bool   `json:"disabled"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("hooks list --json = %q: %v", out, err)
	}
	seen := map[string]string{}
	for _, l := range list {
		seen[l.Name] = l.Source
		if l.Name == "weave.rules-injector" && !l.Disabled {
			t.Error("weave.rules-injector is listed as enabled; config disables it")
		}
	}
	if seen["command.PreToolUse.1"] != "command" || seen["weave.start-work"] != "builtin" {
		t.Errorf("hooks list = %v, want the command hook and the built-ins", seen)
	}

	evFile := filepath.Join(t.TempDir(), "ev.json")
	write := func(s string) {
		if err := os.WriteFile(evFile, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A Claude Code hook input, as a pasted sample would be.
	write(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"session_id":"s1"}`)
	code, out, errOut = runCLI(t, "--dir", dir, "hooks", "test", "command.PreToolUse.1", "--event", evFile)
	if code != exitOK || !strings.Contains(out, "decision: block") || !strings.Contains(out, "no rm -rf here") {
		t.Errorf("hooks test (command) = %d %q %q, want a block with the script's reason", code, out, errOut)
	}
	// A built-in runs as a plugin subprocess (this test binary, re-executed).
	write(`{"name":"chat.message","message":"ulw please","session_id":"s1"}`)
	code, out, errOut = runCLI(t, "--dir", dir, "hooks", "test", "weave.keyword-detector", "--event", evFile)
	if code != exitOK || !strings.Contains(out, "decision: allow") || !strings.Contains(out, "keep working until the plan is done") {
		t.Errorf("hooks test (built-in) = %d %q %q, want allow with the ultrawork context", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "--dir", dir, "hooks", "test", "nope", "--event", evFile); code != exitFailed || !strings.Contains(errOut, "weave hooks list") {
		t.Errorf("hooks test nope = %d %q, want 1 and a pointer to hooks list", code, errOut)
	}
}

func TestCommandHookBlocksRunbookBlock(t *testing.T) {
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Clean up\n  ```sh\n  rm -rf build\n  ```\n- [ ] 2. Deploy\n  ```sh\n  echo deploying\n  ```\n"
	tests := []struct {
		name, hook, reason string
	}{
		{"exit 2 with stderr", `if grep -q "rm -rf"; then echo "rm -rf is not allowed in runbooks" >&2; exit 2; fi`, "rm -rf is not allowed in runbooks"},
		{"JSON deny", `if grep -q "rm -rf"; then printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"ask a human first"}}'; fi`, "ask a human first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, map[string]string{"p": plan})
			cfg := "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: " + strconvQuote(tc.hook) + "\n"
			if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, "--dir", dir, "start-work", "p")
			if code != exitFailed {
				t.Fatalf("exit = %d, want 1; out %q err %q", code, out, errOut)
			}
			if !strings.Contains(out+errOut, tc.reason) {
				t.Errorf("the hook's reason %q did not reach the user:\n%s\n%s", tc.reason, out, errOut)
			}
			b, _ := os.ReadFile(filepath.Join(dir, ".weave", "plans", "p.md"))
			if strings.Contains(string(b), "[x]") {
				t.Errorf("a blocked task was ticked:\n%s", b)
			}
		})
	}
}

// strconvQuote quotes s for a YAML double-quoted scalar.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// notifyBuffer is a concurrency-safe output buffer that signals each write.
type notifyBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func (b *notifyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (b *notifyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the buffer holds want; the deadline guards a hang.
func (b *notifyBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(b.String(), want) {
		select {
		case <-b.wrote:
		case <-deadline:
			t.Fatalf("output never showed %q:\n%s", want, b.String())
		}
	}
}

func TestStatusWatchRedrawsOnPlanChange(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	out := &notifyBuffer{wrote: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- runArgs(ctx, &Streams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard}, []string{"--dir", dir, "status", "--watch"})
	}()
	out.waitFor(t, "ok\t0\t2")
	// The user ticks a task by hand; the watcher redraws.
	path := filepath.Join(dir, ".weave", "plans", "ok.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte("- [ ] 1."), []byte("- [x] 1."), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "ok\t1\t2")
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("status --watch exit = %d, want 0 after Ctrl-C", code)
	}
}

func TestConfigShowSources(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("runbook:\n  retries: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEAVE_LOG_LEVEL", "debug")
	code, out, errOut := runCLI(t, "--dir", dir, "config", "show", "--sources")
	if code != exitOK {
		t.Fatalf("config show = %d %q", code, errOut)
	}
	for _, want := range []string{"retries: 4", "# project: " + filepath.Join(dir, ".weave", "config.yaml"), "level: debug", "# env: WEAVE_LOG_LEVEL", "# default"} {
		if !strings.Contains(out, want) {
			t.Errorf("config show --sources lacks %q:\n%s", want, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("runbook:\n  retries: many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "--dir", dir, "config", "show")
	if code != exitFailed || !strings.Contains(errOut, "runbook.retries") || !strings.Contains(errOut, "config.yaml") {
		t.Errorf("config show with a bad value = %d %q, want 1 naming the file and key", code, errOut)
	}
}

func TestPrintableOutputLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"\x1b[31mred\x1b[0m and \x1b[1;32mgreen\x1b[m", "red and green"},
		{"progress 10%\rprogress 50%\rprogress 100%", "progress 100%"},
		{"tab\there\x07bell\x00nul", "tab herebellnul"},
		{"\x1b]0;window title\x07shown", "shown"},
		{"ünïcödé ✓", "ünïcödé ✓"},
	}
	for _, tc := range tests {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
