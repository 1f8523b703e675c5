package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/sandbox"
)

// needSandbox skips a test on a machine that cannot build the sandbox.
func needSandbox(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err == nil {
		err = sandbox.Probe(context.Background(), exe)
	}
	if err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
}

// running lists the live processes whose command line holds mark.
func running(mark string) []int {
	des, _ := os.ReadDir("/proc")
	var out []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + de.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(mark)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + de.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// A sandboxed call that times out ends with everything it started, a
// setsid child included.
func TestSandboxTimeoutEndsEverything(t *testing.T) {
	needSandbox(t)
	e := newToolsEnv(t, nil, nil)
	mark := fmt.Sprintf("300.%d", 1000+os.Getpid()%9000)
	cmd := fmt.Sprintf("setsid sleep %s & sleep %s & echo started; wait", mark, mark)
	res := e.call(t, asTapestry, "bash", map[string]any{"command": cmd, "timeout": "2s"})
	expect(t, "bash timeout", res, true, "started", "timed out after 2s")
	deadline := time.Now().Add(10 * time.Second) // a failure guard only
	for len(running(mark)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v outlived the call", running(mark))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Pattern's bash writes plans and nothing else of the project; a
// delegated read-only role writes nothing.
func TestSandboxScopedAndDelegated(t *testing.T) {
	needSandbox(t)
	e := newToolsEnv(t, func(c *config.Config) { c.Sandbox.Network = "allow" }, nil)
	if err := os.MkdirAll(filepath.Join(e.project, ".weave", "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	pattern := Caller{Agent: "pattern", Chain: []string{"loom", "pattern"}}
	res := e.call(t, pattern, "bash", map[string]any{"command": "echo p > .weave/plans/p.md && echo plan written; echo x > x.txt"})
	expect(t, "pattern's bash", res, true, "plan written", "Read-only file system",
		"read-only sandbox: pattern may write only .weave/plans/ and a private /tmp; the rest of the project and of the file system is read-only")
	if _, err := os.Stat(filepath.Join(e.project, "x.txt")); err == nil {
		t.Error("pattern's bash wrote x.txt")
	}
	thread := Caller{Agent: "thread", Chain: []string{"loom", "thread"}}
	res = e.call(t, thread, "bash", map[string]any{"command": "echo t > .weave/plans/t.md"})
	expect(t, "thread's bash", res, true, "Read-only file system", "read-only sandbox: thread has no write or edit")
	if _, err := os.Stat(filepath.Join(e.project, ".weave", "plans", "t.md")); err == nil {
		t.Error("thread's bash wrote a plan")
	}
}
