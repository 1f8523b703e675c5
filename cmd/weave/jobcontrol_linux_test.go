//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/proctest"
)

// tstpPlan's block counts in a file every 50 ms until the test releases
// it, and records its process group (its shell leads it).
const tstpPlan = "# Stop\n\n## TODOs\n\n" +
	"- [ ] 1. Count\n  ```sh\n" +
	"  echo $$ > block.pid\n" +
	"  n=0\n" +
	"  while [ ! -f release ]; do n=$((n+1)); echo $n > counter.tmp; mv counter.tmp counter; sleep 0.05; done\n" +
	"  ```\n"

// tstpCadence is the block's loop period.
const tstpCadence = 50 * time.Millisecond

// waitFor polls cond until it holds, failing the test with what after a
// generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counter reads the block's counter, -1 when it is not there yet.
func counter(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "counter"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// allStopped reports whether pgid has members and every one is stopped (a
// zombie counts: its stopped parent cannot reap it until it continues; so
// does a shell in the kernel (D) waiting on a vforked child that was
// stopped before it could exec).
func allStopped(pgid int) bool {
	members := proctest.Group(pgid)
	for _, pid := range members {
		if st := proctest.State(pid); st != 'T' && st != 'Z' && st != 'D' {
			return false
		}
	}
	return len(members) > 0
}

func TestCtrlZStopsTheBlockWithWeave(t *testing.T) {
	for _, stderrClosed := range []bool{false, true} {
		t.Run(fmt.Sprintf("stderr closed %v", stderrClosed), func(t *testing.T) {
			dir := project(t, map[string]string{"stop": tstpPlan})
			cmd := weaveCmd(t, dir, nil, "start-work", "stop")
			// Weave leads its own group, as a shell's job does: the test
			// signals that group as a terminal's Ctrl-Z and fg would.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stdout, stderr bytes.Buffer
			cmd.Stdout = &stdout
			cmd.Stderr = &stderr
			// closeStderr makes standard error a closed pipe once the run's
			// warnings are written (a closed pipe from the start would
			// pause the run at its first warning, as it should).
			closeStderr := func() {}
			if stderrClosed {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				cmd.Stderr = w
				copied := make(chan struct{})
				go func() { _, _ = io.Copy(&stderr, r); close(copied) }()
				closeStderr = func() { r.Close(); <-copied }
				defer w.Close()
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pgid := cmd.Process.Pid
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-done
			})

			waitFor(t, "the block counts", func() bool { return counter(dir) >= 2 })
			block := readInt(t, filepath.Join(dir, "block.pid"))
			closeStderr()

			if err := syscall.Kill(-pgid, syscall.SIGTSTP); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "weave is stopped (state T)", func() bool { return proctest.State(pgid) == 'T' })
			waitFor(t, "every process of the block is stopped (state T)", func() bool { return allStopped(block) })
			before := counter(dir)
			// Four of the block's rounds: a block still running would count.
			time.Sleep(4 * tstpCadence)
			if after := counter(dir); after != before {
				t.Fatalf("the block counted from %d to %d while weave was stopped", before, after)
			}

			if err := syscall.Kill(-pgid, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the block counts again", func() bool { return counter(dir) > before })
			if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				// A failure guard only a hang reaches.
				t.Fatalf("weave still runs two minutes after it was continued\nstderr: %s", stderr.String())
			}
			done <- err // for the cleanup
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("weave after Ctrl-Z and fg: exit %d, want 0 (the run goes on)\nstderr: %s", ee.ExitCode(), stderr.String())
			} else if err != nil {
				t.Fatal(err)
			}
			if !stderrClosed && !strings.Contains(stderr.String(), "weave: stopped with the command it runs") {
				t.Errorf("weave did not say it stopped the block with it:\n%s", stderr.String())
			}
			if stderrClosed {
				// A reader that went away does not end the run.
				assertNotPaused(t, dir)
			}
		})
	}
}

// assertNotPaused checks the run's state records no pause.
func assertNotPaused(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".weave", "state.json"))
	if err != nil {
		return
	}
	if strings.Contains(string(b), `"paused":true`) {
		t.Errorf("the run paused: %s", b)
	}
}
