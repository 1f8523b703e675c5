//go:build torture

package main

// The torture suite runs the built weave against hostile inputs, each in
// its own project, and prints for each the outcome, the wall time and the
// peak RSS of the weave process, and the latency of a normal command
// (`weave plan list`) run beside it, next to the idle figures. It asserts
// only what must hold (nothing hangs past a bound, nothing outside the
// project is touched, the files stay bounded); the figures are printed for
// people, never compared with a threshold. Run it with scripts/torture.sh.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/host/run/runtest"
	"github.com/weavehq/weave/plugins"
)

// tortureFloodEnv makes this test binary serve the flooding hook plugin.
const tortureFloodEnv = "WEAVE_TORTURE_FLOOD"

func init() {
	if os.Getenv(tortureFloodEnv) == "1" {
		plugins.ServeHook(floodHook{})
		os.Exit(0)
	}
}

// floodHook writes floodBytes to stderr on every call and blocks bash calls
// whose command says "block" with a reason of reasonBytes.
type floodHook struct{}

const (
	floodBytes  = 32 << 20
	reasonBytes = 3 << 20 // under gRPC's 4 MiB message limit
)

func (floodHook) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "flood", Version: "1.0.0", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore}}, nil
}

func (floodHook) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	line := strings.Repeat("flood ", 170) + "\n"
	for n := 0; n < floodBytes; n += len(line) {
		os.Stderr.WriteString(line)
	}
	if cmd, _ := ev.Args["command"].(string); strings.Contains(cmd, "block") {
		return plugins.Decision{Action: plugins.Block, Reason: strings.Repeat("no! ", reasonBytes/4)}, nil
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

// run is one weave process's figures.
type figures struct {
	code   int
	wall   time.Duration
	rssMB  float64
	stderr string
}

// tortureRun runs bin with args in dir, killing it after limit.
func tortureRun(t *testing.T, bin, dir string, limit time.Duration, args ...string) figures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--dir", dir}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, ".xdg"))
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &errOut
	start := time.Now()
	err := cmd.Run()
	f := figures{wall: time.Since(start), stderr: errOut.String(), code: cmd.ProcessState.ExitCode()}
	if ctx.Err() != nil {
		t.Errorf("weave %s did not finish within %v (killed): %v", strings.Join(args, " "), limit, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		f.rssMB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return f
}

// normalLatency runs `weave plan list` in dir n times and returns the
// median wall time.
func normalLatency(t *testing.T, bin, dir string, n int) time.Duration {
	var ds []time.Duration
	for range n {
		ds = append(ds, tortureRun(t, bin, dir, time.Minute, "plan", "list").wall)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// during runs the hostile command and, beside it, the normal command until
// the hostile one ends (at least once), and returns both.
func during(t *testing.T, bin, dir string, limit time.Duration, args ...string) (figures, time.Duration) {
	done := make(chan figures, 1)
	go func() { done <- tortureRun(t, bin, dir, limit, args...) }()
	var ds []time.Duration
	for {
		ds = append(ds, tortureRun(t, bin, dir, time.Minute, "plan", "list").wall)
		select {
		case f := <-done:
			slices.Sort(ds)
			return f, ds[len(ds)/2]
		default:
		}
	}
}

const torturePlan = "# OK\n\n## TODOs\n\n- [ ] 1. One\n  ```sh\n  echo one\n  ```\n- [ ] 2. Two\n  ```sh\n  echo two\n  ```\n"

func tortureProject(t *testing.T, planFiles map[string]string) string {
	t.Helper()
	return runtest.NewProject(t, planFiles)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func TestTorture(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "weave")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	var report strings.Builder
	row := func(name, cmd string, f figures, normal time.Duration, note string) {
		note = strings.ReplaceAll(note, os.TempDir(), "$TMPDIR")
		fmt.Fprintf(&report, "%-26s %-22s exit %-3d %9.1f ms %8.1f MB %10.1f ms  %s\n",
			name, cmd, f.code, float64(f.wall.Microseconds())/1000, f.rssMB, float64(normal.Microseconds())/1000, note)
	}
	fmt.Fprintf(&report, "%-26s %-22s %-8s %12s %11s %13s  %s\n", "scenario", "command", "", "wall", "peak RSS", "plan list", "")

	// Idle: a normal project, no hostile input.
	idle := tortureProject(t, map[string]string{"ok": torturePlan})
	idleNormal := normalLatency(t, bin, idle, 5)
	row("idle", "status", tortureRun(t, bin, idle, time.Minute, "status"), idleNormal, "")
	row("idle", "start-work ok", tortureRun(t, bin, idle, 2*time.Minute, "start-work", "ok"), idleNormal, "")

	// Files.
	t.Run("lock symlink", func(t *testing.T) {
		dir := tortureProject(t, map[string]string{"ok": torturePlan})
		victim := filepath.Join(dir, "victim.txt")
		os.WriteFile(victim, []byte("precious\n"), 0o644)
		os.Symlink("../victim.txt", filepath.Join(dir, ".weave", "weave.lock"))
		f, normal := during(t, bin, dir, time.Minute, "start-work", "ok")
		b, _ := os.ReadFile(victim)
		if string(b) != "precious\n" {
			t.Errorf("the lock's target was changed: %q", b)
		}
		row("lock -> ../victim.txt", "start-work ok", f, normal, fmt.Sprintf("victim %d bytes", len(b)))
	})
	for _, tc := range []struct {
		name string
		make func(string) error
	}{
		{"state.json FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"state.json -> /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tortureProject(t, map[string]string{"ok": torturePlan})
			if err := tc.make(filepath.Join(dir, ".weave", "state.json")); err != nil {
				t.Fatal(err)
			}
			f, normal := during(t, bin, dir, time.Minute, "status")
			row(tc.name, "status", f, normal, firstLine(f.stderr))
			f, normal = during(t, bin, dir, time.Minute, "start-work", "ok")
			row(tc.name, "start-work ok", f, normal, firstLine(f.stderr))
		})
	}
	t.Run("nested plans", func(t *testing.T) {
		var list strings.Builder
		list.WriteString("# List\n\n## TODOs\n\n")
		for i := 0; list.Len() < 2<<20; i++ {
			list.WriteString(strings.Repeat("  ", i%3000) + "- [ ] x\n")
		}
		dir := tortureProject(t, map[string]string{
			"ok":     torturePlan,
			"quotes": "# Q\n\n" + strings.Repeat(">", 200<<10) + "\n",
			"list":   list.String(),
			"stairs": list.String()[:900<<10],
		})
		for _, args := range [][]string{{"plan", "list"}, {"status"}, {"start-work", "quotes"}} {
			f, normal := during(t, bin, dir, time.Minute, args...)
			row("200 KB quotes, 2 MB list", strings.Join(args, " "), f, normal, firstLine(f.stderr))
		}
	})
	t.Run("flooding plugin", func(t *testing.T) {
		dir := tortureProject(t, map[string]string{
			"ok":    torturePlan,
			"block": "# B\n\n## TODOs\n\n- [ ] 1. Blocked\n  ```sh\n  echo block\n  ```\n",
		})
		plugin := filepath.Join(dir, ".weave", "plugins", "flood")
		os.MkdirAll(filepath.Dir(plugin), 0o755)
		script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q\n", tortureFloodEnv, self)
		if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		f, normal := during(t, bin, dir, 5*time.Minute, "start-work", "ok")
		logSize := fileSize(filepath.Join(dir, ".weave", "logs", "weave.log"))
		row("plugin floods stderr", "start-work ok", f, normal, fmt.Sprintf("weave.log %.1f MB after %d MB of stderr", float64(logSize)/(1<<20), 2*floodBytes>>20))
		if logSize > 2*(maxHostLog) {
			t.Errorf("weave.log is %d bytes after the flood, want it bounded near %d", logSize, maxHostLog)
		}
		f, normal = during(t, bin, dir, 5*time.Minute, "start-work", "block")
		stateSize := fileSize(filepath.Join(dir, ".weave", "state.json"))
		row("plugin 3 MB block reason", "start-work block", f, normal, fmt.Sprintf("state.json %d bytes", stateSize))
		if stateSize > 64<<10 {
			t.Errorf("state.json is %d bytes after a 3 MB block reason, want it capped", stateSize)
		}
	})

	// Bus (peers): the batch flood, the subscription flood, the silent
	// session:* subscriber and slow bodies go here, as rows beside these.

	fmt.Printf("\n%s", report.String())
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 110 {
		s = s[:110] + "…"
	}
	return s
}
