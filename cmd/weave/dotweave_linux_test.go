package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
)

// Hostile files under .weave/ that weave reads or appends (the progress
// cache, session transcripts, the logs) and that are not regular files
// inside the project: each command answers promptly, with an error or by
// skipping the file, never hangs on a pipe, never reads a device without
// end and never writes out of the project.

// boundedRun is one weave process: its exit code, output, the most memory
// it held (the kernel's accounting of the child, rusage maxrss) and how
// long it took.
type boundedRun struct {
	code        int
	out, errOut string
	maxRSS      int64 // bytes
	took        time.Duration
}

// runWeaveLimited runs the binary with its address space capped (so that
// a process reading without end fails fast instead of taking the machine)
// and a deadline that only a hang reaches.
func runWeaveLimited(t *testing.T, bin, dir string, env []string, args ...string) boundedRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -v 3000000 && exec "$0" "$@"`, bin}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader("")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := boundedRun{out: out.String(), errOut: errOut.String(), took: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("weave %s did not answer within %s (a hang)\nstderr: %s", strings.Join(args, " "), r.took.Round(time.Second), r.errOut)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10
	}
	t.Logf("weave %s: exit %d in %s, peak RSS %d MiB", strings.Join(args, " "), r.code, r.took.Round(time.Millisecond), r.maxRSS>>20)
	return r
}

// maxPeakRSS is far above what weave needs for these commands (tens of
// MiB) and far below what reading a device takes.
const maxPeakRSS = 256 << 20

func checkBounded(t *testing.T, r boundedRun, what string) {
	t.Helper()
	if r.maxRSS > maxPeakRSS {
		t.Errorf("%s: peak RSS %d MiB, want under %d MiB", what, r.maxRSS>>20, maxPeakRSS>>20)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// outsideDir is a directory beside the project, with one precious file.
func outsideDir(t *testing.T) (dir, precious string) {
	t.Helper()
	dir = t.TempDir()
	precious = filepath.Join(dir, "precious.jsonl")
	if err := os.WriteFile(precious, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, precious
}

// assertOutsideUntouched checks that dir still holds only the precious
// file, unchanged.
func assertOutsideUntouched(t *testing.T, dir, precious string) {
	t.Helper()
	if b, err := os.ReadFile(precious); err != nil || string(b) != "precious\n" {
		t.Errorf("the file outside the project = %q, %v; want it untouched", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the directory outside the project holds %v; weave wrote there", names)
	}
}

func TestProgressCacheThatIsNotARegularFileInside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	env := cleanEnv(t)
	cache := func(dir string) string { return filepath.Join(dir, ".weave", "cache", "progress.json") }
	tests := []struct {
		name string
		make func(t *testing.T, dir, outside, precious string)
	}{
		{"link to /dev/zero", func(t *testing.T, dir, _, _ string) { symlink(t, "/dev/zero", cache(dir)) }},
		{"named pipe", func(t *testing.T, dir, _, _ string) { mkfifo(t, cache(dir)) }},
		{"link out of the project", func(t *testing.T, dir, _, precious string) { symlink(t, precious, cache(dir)) }},
		{"cache directory linked out of the project", func(t *testing.T, dir, outside, _ string) {
			symlink(t, outside, filepath.Dir(cache(dir)))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, map[string]string{"ok": okPlan})
			outside, precious := outsideDir(t)
			tc.make(t, dir, outside, precious)
			for _, args := range [][]string{{"status"}, {"plan", "list"}} {
				r := runWeaveLimited(t, bin, dir, env, args...)
				if r.code != exitOK || !strings.Contains(r.out, "ok") {
					t.Errorf("weave %s = exit %d %q %q, want the plan listed (the cache ignored)", args[0], r.code, r.out, r.errOut)
				}
				checkBounded(t, r, "weave "+args[0])
			}
			assertOutsideUntouched(t, outside, precious)
		})
	}
}

func TestSessionFilesThatAreNotRegularFilesInside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	const id = "chat-hostile"
	transcript := func(dir string) string { return filepath.Join(dir, ".weave", "sessions", id+".jsonl") }
	good := `{"time":"2026-01-02T10:00:00Z","type":"message","agent":"loom","message":{"role":"user","content":"hi"}}` + "\n"
	tests := []struct {
		name string
		make func(t *testing.T, dir, precious string)
		want string // what the refusal says
	}{
		{"named pipe", func(t *testing.T, dir, _ string) { mkfifo(t, transcript(dir)) }, "named pipe"},
		{"link out of the project", func(t *testing.T, dir, precious string) {
			if err := os.WriteFile(precious, []byte(good), 0o644); err != nil {
				t.Fatal(err)
			}
			symlink(t, precious, transcript(dir))
		}, "outside the project"},
		{"link to /dev/zero", func(t *testing.T, dir, _ string) { symlink(t, "/dev/zero", transcript(dir)) }, "outside the project"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, map[string]string{"ok": okPlan})
			outside, precious := outsideDir(t)
			tc.make(t, dir, precious)
			before, _ := os.ReadFile(precious)
			// A plan run names the session in state.json, so that status
			// reads its tokens.
			writeFile(t, filepath.Join(dir, ".weave", "state.json"), `{"schema_version":1,"active_plan":"`+
				filepath.Join(dir, ".weave", "plans", "ok.md")+`","plan_name":"ok","agent":"tapestry","session_ids":["`+id+`"],"started_at":"2026-01-02T10:00:00Z","updated_at":"2026-01-02T10:00:00Z"}`)
			writeFile(t, filepath.Join(dir, ".weave", "sessions", "chat-fine.jsonl"), good)

			srv := modeltest.NewServer(t, modeltest.Turn{Text: "resumed"})
			env := chatEnv(t, srv)
			r := runWeaveLimited(t, bin, dir, env, "sessions", "list")
			if r.code != exitOK || !strings.Contains(r.out, "chat-fine") || strings.Contains(r.out, id) {
				t.Errorf("sessions list = exit %d %q %q, want chat-fine listed and %s skipped", r.code, r.out, r.errOut, id)
			}
			checkBounded(t, r, "sessions list")
			r = runWeaveLimited(t, bin, dir, env, "status")
			if r.code != exitOK || !strings.Contains(r.out, "ok") {
				t.Errorf("status = exit %d %q %q, want the plan shown", r.code, r.out, r.errOut)
			}
			checkBounded(t, r, "status")
			for _, args := range [][]string{{"sessions", "show", id}, {"chat", "--resume", id, "-p", "go on"}} {
				r = runWeaveLimited(t, bin, dir, env, args...)
				if r.code == exitOK || !strings.Contains(r.errOut, tc.want) || !strings.Contains(r.errOut, id+".jsonl") {
					t.Errorf("weave %s = exit %d %q, want a refusal naming %s.jsonl as %s", strings.Join(args[:2], " "), r.code, r.errOut, id, tc.want)
				}
				checkBounded(t, r, "weave "+args[0])
			}
			if len(srv.Requests()) != 0 {
				t.Errorf("the model was asked %d times; a refused resume must not start a turn", len(srv.Requests()))
			}
			if after, _ := os.ReadFile(precious); !bytes.Equal(before, after) {
				t.Errorf("the transcript outside the project changed:\n%s", after)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 1 {
				t.Errorf("the directory outside the project holds %d files, want 1", len(entries))
			}
		})
	}
}

func TestLogsLinkedOutOfTheProject(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"ok": okPlan})
	outside, precious := outsideDir(t)
	symlink(t, outside, filepath.Join(dir, ".weave", "logs"))
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "hello"})
	env := chatEnv(t, srv)
	for _, args := range [][]string{{"chat", "-p", "hi"}, {"start-work", "ok"}} {
		r := runWeaveLimited(t, bin, dir, env, args...)
		if r.code == exitOK || !strings.Contains(r.errOut, "host log") || !strings.Contains(r.errOut, "outside the project") {
			t.Errorf("weave %s with .weave/logs linked out = exit %d %q, want a refusal to open the host log there", args[0], r.code, r.errOut)
		}
		checkBounded(t, r, "weave "+args[0])
	}
	assertOutsideUntouched(t, outside, precious)
	if b, err := os.ReadFile(filepath.Join(dir, ".weave", "plans", "ok.md")); err != nil || string(b) != okPlan {
		t.Errorf("plan changed though the run was refused: %q, %v", b, err)
	}
}

// TestProcessLedgerThatIsNotARegularFileInside plants files in .weave/run/,
// which start-work reads to end what a killed run left behind: a device, a
// named pipe and a link out of the project are skipped, never read.
func TestProcessLedgerThatIsNotARegularFileInside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"ok": okPlan})
	outside, precious := outsideDir(t)
	run := filepath.Join(dir, ".weave", "run")
	symlink(t, "/dev/zero", filepath.Join(run, "1.json"))
	mkfifo(t, filepath.Join(run, "2.json"))
	symlink(t, precious, filepath.Join(run, "3.json"))
	r := runWeaveLimited(t, bin, dir, cleanEnv(t), "start-work", "ok")
	if r.code != exitOK {
		t.Errorf("start-work = exit %d %q, want the plan run", r.code, r.errOut)
	}
	checkBounded(t, r, "start-work")
	assertOutsideUntouched(t, outside, precious)
}
