//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/proctest"
)

// These tests run the real weave binary and kill it the way a user or the
// system would, then look at what is left running (through /proc).

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool { return !proctest.Gone(pid) }

// groupAlive lists the running members of process group pgid.
func groupAlive(pgid int) []int { return proctest.Group(pgid) }

func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

// startUntil starts cmd with --json output and returns once a line of its
// output contains want.
func startUntil(t *testing.T, cmd *exec.Cmd, want string) *bytes.Buffer {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			go func() {
				for sc.Scan() {
				}
			}()
			return &stderr
		}
	}
	t.Fatalf("weave ended before printing %q: %s", want, stderr.String())
	return nil
}

func writeConfig(t *testing.T, dir, yaml string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitGone waits (bounded) for pid to stop running; a SIGKILLed process
// leaves at once, bar scheduling, which a busy machine can stretch: the
// bound is a failure guard only.
func waitGone(pid int) bool {
	deadline := time.Now().Add(time.Minute)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func TestKilledRunLeavesNoBlockRunning(t *testing.T) {
	// The first run starts a long block and is killed with SIGKILL; the
	// resumed run checks, from inside the retried block, whether the first
	// one's sleep still runs beside it.
	plan := "# Long\n\n## TODOs\n\n- [ ] 1. Wait\n  ```sh\n" +
		"  if [ -e sleep.pid ]; then\n" +
		"    st=$(sed 's/.*) //' /proc/$(cat sleep.pid)/stat 2>/dev/null | cut -c1)\n" +
		"    echo \"first=${st:-gone}\" >> resumed.txt; exit 0\n" +
		"  fi\n" +
		"  sleep 20 & echo $! > sleep.pid\n  echo started\n  wait\n  ```\n"
	dir := project(t, map[string]string{"long": plan})
	first := weaveCmd(t, dir, nil, "start-work", "--json", "long")
	startUntil(t, first, `"output":"started"`)
	sleepPID := readInt(t, filepath.Join(dir, "sleep.pid"))
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	out, err := weaveCmd(t, dir, nil, "start-work", "long").CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "resumed.txt"))
	if got := strings.TrimSpace(string(b)); got != "first=gone" && got != "first=Z" {
		t.Errorf("the retried task ran beside the killed run's block (%s), want first=gone", got)
	}
	if alive(sleepPID) {
		t.Errorf("the killed run's block (sleep 20, pid %d) is still running after the next start", sleepPID)
	}
	if !strings.Contains(string(out), "left running") {
		t.Errorf("the resumed run did not say it ended what the last run left:\n%s", out)
	}
}

func TestInterruptWaitsForATrappingBlock(t *testing.T) {
	plan := "# Trap\n\n## TODOs\n\n- [ ] 1. Ignore signals\n  ```bash\n  trap '' INT TERM\n  echo $$ > block.pid\n  echo started\n  sleep 30\n  echo slept\n  ```\n"
	dir := project(t, map[string]string{"trap": plan})
	cmd := weaveCmd(t, dir, nil, "start-work", "--json", "trap")
	// weave runs as a terminal job does: the leader of its own process
	// group, which Ctrl-C signals as a whole (plugins included).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startUntil(t, cmd, `"output":"started"`)
	pgid := readInt(t, filepath.Join(dir, "block.pid"))
	if len(groupAlive(pgid)) == 0 {
		t.Fatal("the block is not running")
	}
	// Ctrl-C reaches weave's group; the block runs in a group of its own.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitPaused {
		t.Errorf("weave after Ctrl-C: %v, want exit %d (paused)", err, exitPaused)
	}
	// weave has exited: by then the block's group must be gone.
	if left := groupAlive(pgid); len(left) > 0 {
		t.Errorf("weave exited with the block's process group still running: pids %v", left)
	}
}

func TestCommandHookChildrenDoNotOutliveTheRun(t *testing.T) {
	plan := "# Hooked\n\n## TODOs\n\n- [ ] 1. Echo\n  ```sh\n  echo hi\n  ```\n"
	dir := project(t, map[string]string{"hooked": plan})
	hook := `(sleep 300; echo late >> late.txt) & echo $! > bg.pid; echo '{}'`
	writeConfig(t, dir, "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: "+strconvQuote(hook)+"\n")
	if out, err := weaveCmd(t, dir, nil, "start-work", "hooked").CombinedOutput(); err != nil {
		t.Fatalf("start-work: %v\n%s", err, out)
	}
	bg := readInt(t, filepath.Join(dir, "bg.pid"))
	if !waitGone(bg) {
		t.Errorf("the command hook's background child (pid %d) outlived the run", bg)
	}
}

func TestKilledDuringCommandHookLeavesNothing(t *testing.T) {
	plan := "# Hooked\n\n## TODOs\n\n- [ ] 1. Echo\n  ```sh\n  echo hi\n  ```\n"
	dir := project(t, map[string]string{"hooked": plan})
	// The first time, the hook hangs with a child; the next time it allows.
	hook := `if [ -e hook.pid ]; then echo '{}'; exit 0; fi; echo $$ > hook.pid; sleep 300 & wait`
	writeConfig(t, dir, "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: "+strconvQuote(hook)+"\n")
	first := weaveCmd(t, dir, nil, "start-work", "--json", "hooked")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "hook.pid")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(pidFile); bytes.HasSuffix(b, []byte("\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command hook never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	pgid := readInt(t, pidFile)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if out, err := weaveCmd(t, dir, nil, "start-work", "hooked").CombinedOutput(); err != nil {
		t.Fatalf("next run: %v\n%s", err, out)
	}
	if left := groupAlive(pgid); len(left) > 0 {
		t.Errorf("the killed run's command hook is still running after the next start: pids %v", left)
	}
}

// TestChildrenGetNoSecrets: a command hook gets the person's environment, as
// Claude Code's hooks do, but never weave's own credentials; a block gets no
// secret at all.
func TestChildrenGetNoSecrets(t *testing.T) {
	plan := "# Env\n\n## TODOs\n\n- [ ] 1. Dump\n  ```sh\n  env > block.env\n  ```\n"
	dir := project(t, map[string]string{"env": plan})
	writeConfig(t, dir, "model:\n  api_key_env: MY_MODEL_VALUE\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: \"env > hook.env\"\n")
	secrets := []string{"WEAVE_BUS_TOKEN=fake-bus-token", "MY_MODEL_VALUE=fake-model-value", "ANTHROPIC_API_KEY=fake-anthropic"}
	users := []string{"DB_PASS=fake-db-pass", "HARMLESS_SETTING=visible"}
	cmd := weaveCmd(t, dir, append(secrets, users...), "start-work", "env")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start-work: %v\n%s", err, out)
	}
	for _, f := range []string{"block.env", "hook.env"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			_, v, _ := strings.Cut(s, "=")
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds the secret of %s", f, s)
			}
		}
		for _, u := range users {
			if f == "block.env" && strings.HasPrefix(u, "DB_PASS=") {
				if bytes.Contains(b, []byte(u)) {
					t.Errorf("%s holds the secret %s", f, u)
				}
				continue
			}
			if !bytes.Contains(b, []byte(u)) {
				t.Errorf("%s lacks the person's %s:\n%s", f, u, b)
			}
		}
	}
}

func TestRunbookShellRunsShBlocks(t *testing.T) {
	plan := "# Shell\n\n## TODOs\n\n- [ ] 1. Test\n  ```sh\n  [[ 1 -eq 1 ]] && echo ok > shell.txt\n  ```\n"
	for _, tc := range []struct {
		name, config string
		env          []string
	}{
		{"config", "runbook:\n  shell: bash\n", nil},
		{"environment", "", []string{"WEAVE_RUNBOOK_SHELL=bash"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, map[string]string{"shell": plan})
			writeConfig(t, dir, tc.config)
			if out, err := weaveCmd(t, dir, tc.env, "start-work", "shell").CombinedOutput(); err != nil {
				t.Fatalf("start-work with runbook.shell bash: %v\n%s", err, out)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "shell.txt")); strings.TrimSpace(string(b)) != "ok" {
				t.Errorf("shell.txt = %q, want ok", b)
			}
		})
	}
}

func TestBrokenGuardPluginStopsTheRun(t *testing.T) {
	plan := "# Guarded\n\n## TODOs\n\n- [ ] 1. Touch\n  ```sh\n  touch ran.txt\n  ```\n"
	dir := project(t, map[string]string{"guarded": plan})
	plugins := filepath.Join(dir, ".weave", "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	// A plugin that crashes at start, as a binary for another architecture
	// or a broken build would.
	if err := os.WriteFile(filepath.Join(plugins, "no-rm"), []byte("#!/bin/sh\necho 'exec format error' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := weaveCmd(t, dir, nil, "start-work", "guarded")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailed {
		t.Fatalf("start-work with a broken plugin: %v, want exit %d\n%s", err, exitFailed, stderr.String())
	}
	msg := stderr.String()
	for _, want := range []string{"no-rm", "exited before completing the plugin handshake", "optional: true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error on screen lacks %q:\n%s", want, msg)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err == nil {
		t.Error("the task ran although a plugin that may be its guard could not start")
	}

	// Marked optional, the plugin is left out and the run goes on.
	writeConfig(t, dir, "plugins:\n  - name: no-rm\n    optional: true\n")
	if out, err := weaveCmd(t, dir, nil, "start-work", "guarded").CombinedOutput(); err != nil {
		t.Fatalf("start-work with the broken plugin optional: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err != nil {
		t.Error("the task did not run with the broken plugin marked optional")
	}
}

// A guard plugin that dies in the middle of a run stops the run there: the
// call it was deciding on does not run, nor does anything after it, and
// the person is told which hook failed.
func TestGuardDyingMidRunStopsTheRun(t *testing.T) {
	plan := "# Guarded\n\n## TODOs\n\n" +
		"- [ ] 1. One\n  ```sh\n  touch one.txt\n  ```\n" +
		"- [ ] 2. Two\n  ```sh\n  touch two.txt\n  ```\n" +
		"- [ ] 3. Three\n  ```sh\n  touch three.txt\n  ```\n"
	dir := project(t, map[string]string{"guarded": plan})
	buildGo(t, "./cmd/weave/testdata/crashhook", filepath.Join(dir, ".weave", "plugins", "crashhook"))
	t.Setenv("WEAVE_CRASH_COUNT", filepath.Join(t.TempDir(), "calls"))

	code, out, errOut := runCLI(t, "--dir", dir, "start-work", "guarded")
	if code != exitFailed {
		t.Fatalf("start-work with a guard that dies = %d, want %d\nout %s\nerr %s", code, exitFailed, out, errOut)
	}
	if !strings.Contains(errOut, "crashhook") || !strings.Contains(errOut, "disabled_hooks") {
		t.Errorf("the error does not name the hook that failed and how to turn it off:\n%s", errOut)
	}
	if strings.Contains(errOut, "plugin address") {
		t.Errorf("the plugin's own log lines reached the terminal; they belong in the log:\n%s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "one.txt")); err != nil {
		t.Error("task 1 did not run although the guard allowed it")
	}
	for _, f := range []string{"two.txt", "three.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists: work ran after its guard died", f)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ".weave", "plans", "guarded.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "- [x] 1. One") || strings.Contains(string(b), "- [x] 2.") || strings.Contains(string(b), "- [x] 3.") {
		t.Errorf("the plan should have task 1 ticked and no other:\n%s", b)
	}
}

// On a terminal, status --watch keeps the in-flight task's timer ticking
// while nothing under .weave/ changes.
func TestStatusWatchTimerTicksBetweenChanges(t *testing.T) {
	plan := "# Slow\n\n## TODOs\n\n- [ ] 1. Wait\n  ```sh\n  echo started\n  sleep 30\n  ```\n"
	dir := project(t, map[string]string{"slow": plan})
	run := weaveCmd(t, dir, nil, "start-work", "--json", "slow")
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startUntil(t, run, `"output":"started"`)
	defer func() {
		_ = syscall.Kill(-run.Process.Pid, syscall.SIGINT)
		_ = run.Wait()
	}()

	// For scripts, the task in flight is one field per fact.
	code, js, errOut := runCLI(t, "--dir", dir, "status", "--json")
	var st struct {
		Plans []struct {
			Name    string
			Current *struct {
				Task       int    `json:"task"`
				Title      string `json:"title"`
				StartedAt  string `json:"started_at"`
				ForSeconds *int64 `json:"for_seconds"`
			}
		}
	}
	if err := json.Unmarshal([]byte(js), &st); code != 0 || err != nil || len(st.Plans) != 1 || st.Plans[0].Current == nil {
		t.Fatalf("status --json = %d %v: %s %s", code, err, js, errOut)
	}
	if c := st.Plans[0].Current; c.Task != 1 || c.Title != "Wait" || c.StartedAt == "" || c.ForSeconds == nil {
		t.Errorf("status --json current = %+v, want task 1, title Wait, started_at and for_seconds", c)
	}

	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int, 1)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	go func() {
		done <- runArgs(ctx, &Streams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard, Terminal: true, Width: 100},
			[]string{"--dir", dir, "status", "--watch"})
	}()
	defer func() { cancel(); <-done }()
	// Two different timers in frames drawn while the files stand still.
	seen := map[string]bool{}
	timer := regexp.MustCompile(`in flight: task 1 \(Wait\), for (\d+s)`)
	deadline := time.After(time.Minute)
	for len(seen) < 2 {
		select {
		case <-deadline:
			t.Fatalf("status --watch drew timers %v in a minute, want two different ones; output:\n%s", seen, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		for _, m := range timer.FindAllStringSubmatch(out.String(), -1) {
			seen[m[1]] = true
		}
	}
}
