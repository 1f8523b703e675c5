//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClosedOutputPipePausesTheRun(t *testing.T) {
	// `weave start-work pipe | head -n N`: the reader goes away while the
	// first task's block still runs and prints. The block keeps printing
	// while its sleep lives, so weave writes to the dead pipe mid-task; the
	// sleep outlasts waitGone's bound, so only weave's ending it passes.
	plan := "# Pipe\n\n## TODOs\n\n" +
		"- [ ] 1. Print and wait\n  ```sh\n" +
		"  sleep 300 & echo $! > sleep.pid\n" +
		"  echo started\n" +
		"  while kill -0 $! 2>/dev/null; do echo tick; sleep 0.05; done\n  ```\n" +
		"- [ ] 2. After\n  ```sh\n  touch second.txt\n  ```\n"
	dir := project(t, map[string]string{"pipe": plan})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := weaveCmd(t, dir, nil, "start-work", "pipe")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Read up to the block's first line, then close the read end: the
	// next write finds the pipe broken.
	sc := bufio.NewScanner(r)
	for sc.Scan() && !strings.Contains(sc.Text(), "started") {
	}
	r.Close()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(2 * time.Minute):
		// A failure guard only a hang reaches.
		t.Fatalf("weave still runs two minutes after its output closed\nstderr: %s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != exitPaused {
		t.Errorf("weave after its output closed: %v, want exit %d (paused)\nstderr: %s", werr, exitPaused, stderr.String())
	}
	// Standard error still has its reader: the pause is said there.
	if !strings.Contains(stderr.String(), "paused: run `weave start-work` to resume") {
		t.Errorf("weave did not say the run paused on standard error:\n%s", stderr.String())
	}
	sleepPID := readInt(t, filepath.Join(dir, "sleep.pid"))
	t.Cleanup(func() { _ = syscall.Kill(sleepPID, syscall.SIGKILL) })
	if !waitGone(sleepPID) {
		t.Errorf("the task's sleep (pid %d) still runs after weave exited", sleepPID)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".weave", "state.json"))
	if err != nil {
		t.Fatalf("no state recorded: %v", err)
	}
	var st struct {
		Paused bool `json:"paused"`
	}
	if err := json.Unmarshal(b, &st); err != nil || !st.Paused {
		t.Errorf("state.json does not record a pause (%v): %s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "second.txt")); err == nil {
		t.Error("the second task ran after the output closed")
	}
}

func TestClosedOutputPipeEndsStatusWatch(t *testing.T) {
	// `weave status --watch | head -n 1`: the next redraw after the reader
	// went away ends the watch as Ctrl-C does (exit 0), not by SIGPIPE.
	dir := project(t, map[string]string{"ok": okPlan})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := weaveCmd(t, dir, nil, "status", "--watch")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if !bufio.NewScanner(r).Scan() {
		t.Fatalf("status --watch printed nothing\nstderr: %s", stderr.String())
	}
	r.Close()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	planFile := filepath.Join(dir, ".weave", "plans", "ok.md")
	deadline := time.After(2 * time.Minute)
	var werr error
	// Each change to the plan makes the watch redraw; keep changing it
	// until a redraw has found the pipe closed and weave has exited.
	for n := 0; ; n++ {
		writeFile(t, planFile, okPlan+strings.Repeat("\n", n%2))
		select {
		case werr = <-done:
		case <-time.After(200 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatalf("status --watch still runs two minutes after its output closed\nstderr: %s", stderr.String())
		}
		break
	}
	if werr != nil {
		t.Errorf("status --watch after its output closed: %v, want exit 0 as after Ctrl-C\nstderr: %s", werr, stderr.String())
	}
}
