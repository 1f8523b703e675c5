package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Hostile .weave/ contents: links, pipes, devices, pathological plans and
// bytes that are not UTF-8 must never destroy, hang or crash a command.

func TestLockSymlinkNeverTruncatesItsTarget(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../victim.txt", filepath.Join(dir, ".weave", "weave.lock")); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "--dir", dir, "start-work", "ok")
	if code == exitOK {
		t.Errorf("start-work with a symlinked lock = exit 0, want a refusal")
	}
	if !strings.Contains(errOut, "symbolic link") || !strings.Contains(errOut, "weave.lock") {
		t.Errorf("stderr = %q, want it to say weave.lock is a symbolic link", errOut)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("victim = %q after start-work, want it untouched", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".weave", "plans", "ok.md")); string(b) != okPlan {
		t.Errorf("plan changed though the run was refused:\n%s", b)
	}
}

func TestStateThatIsNotARegularFile(t *testing.T) {
	tests := []struct {
		name string
		make func(path string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "named pipe"},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "symbolic link"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, map[string]string{"ok": okPlan})
			state := filepath.Join(dir, ".weave", "state.json")
			if err := tc.make(state); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"status"}, {"start-work", "ok"}} {
				code, _, errOut := runCLI(t, append([]string{"--dir", dir}, args...)...)
				if code == exitOK || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "state.json") {
					t.Errorf("%s with state.json a %s = %d %q, want a refusal naming state.json as a %s", args[0], tc.name, code, errOut, tc.want)
				}
			}
			if _, err := os.Lstat(state); err != nil {
				t.Errorf("state.json was removed or moved: %v; weave must leave what is not its own alone", err)
			}
		})
	}
}

func TestOversizedStateIsMovedAside(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	state := filepath.Join(dir, ".weave", "state.json")
	f, err := os.Create(state)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: big to weave, cheap to the disk.
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, out, errOut := runCLI(t, "--dir", dir, "status")
	if code != exitOK || !strings.Contains(out+errOut, "larger than") {
		t.Errorf("status with a 1 GiB state.json = %d %q %q, want it moved aside as too large", code, out, errOut)
	}
}

// nestedQuotes is a plan whose one line nests block quotes 100,000 deep:
// quadratic to a markdown parser.
func nestedQuotes() string {
	return "# Deep\n\n## TODOs\n\n- [ ] 1. Task\n\n" + strings.Repeat(">", 100_000) + " x\n"
}

// nestedList is a plan whose list nests one level deeper on each line.
func nestedList() string {
	var b strings.Builder
	b.WriteString("# Deep list\n\n## TODOs\n\n")
	for i := 0; b.Len() < 900<<10; i++ {
		b.WriteString(strings.Repeat("  ", i%2000) + "- [ ] x\n")
	}
	return b.String()
}

func TestPathologicalPlansAreListedInvalid(t *testing.T) {
	huge := "# Huge\n\n## TODOs\n\n- [ ] 1. Task\n\n" + strings.Repeat("word ", 7_000_000) + "\n"
	dir := project(t, map[string]string{"ok": okPlan, "quotes": nestedQuotes(), "list": nestedList(), "huge": huge})

	code, out, errOut := runCLI(t, "--dir", dir, "plan", "list", "--json")
	if code != exitOK {
		t.Fatalf("plan list = %d %q", code, errOut)
	}
	var list []planEntry
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("plan list --json = %q: %v", out, err)
	}
	why := map[string]string{}
	for _, e := range list {
		why[e.Name] = e.Invalid
	}
	for name, want := range map[string]string{"quotes": "32 levels", "list": "32 levels", "huge": "larger than 32 MiB", "ok": ""} {
		if got, ok := why[name]; !ok || !strings.Contains(got, want) || (want == "") != (got == "") {
			t.Errorf("plan list: %s invalid = %q, want %q", name, got, want)
		}
	}
	code, out, _ = runCLI(t, "--dir", dir, "plan", "list")
	if code != exitOK || !strings.Contains(out, "invalid") {
		t.Errorf("plan list = %d %q, want the deep plans marked invalid", code, out)
	}
	for _, name := range []string{"quotes", "list", "huge"} {
		code, _, errOut := runCLI(t, "--dir", dir, "plan", "validate", name)
		if code != exitFailed || !strings.Contains(errOut, "error") {
			t.Errorf("plan validate %s = %d %q, want exit 1 with the reason", name, code, errOut)
		}
		code, _, errOut = runCLI(t, "--dir", dir, "start-work", name)
		if code == exitOK {
			t.Errorf("start-work %s = exit 0, want a refusal: %q", name, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "--dir", dir, "status"); code != exitOK {
		t.Errorf("status = %d %q", code, errOut)
	}
}

// TestListingStopsOnCtrlC cancels the command's context, as Ctrl-C does
// (Main turns SIGINT into a cancelled context), before a listing that parses
// every plan: it stops instead of reading them.
func TestListingStopsOnCtrlC(t *testing.T) {
	dir := project(t, map[string]string{"a": okPlan, "b": okPlan})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, args := range [][]string{{"plan", "list"}, {"status"}} {
		var out, errOut bytes.Buffer
		code := runArgs(ctx, &Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, append([]string{"--dir", dir}, args...))
		if code == exitOK || strings.Contains(out.String(), "0/2") || !strings.Contains(errOut.String(), "interrupted") {
			t.Errorf("%s after Ctrl-C = %d %q %q, want it interrupted before listing", args[0], code, out.String(), errOut.String())
		}
	}
}

func TestBlocksRunByteExact(t *testing.T) {
	plan := "# Raw\n\n## TODOs\n\n- [ ] 1. Caf\xe9 au lait\n  ```sh\n  printf 'a\xe9b' > out.bin\n  ```\n- [ ] Unnumbered caf\xe9\n  ```sh\n  printf 'ok' > second.bin\n  ```\n"
	dir := project(t, map[string]string{"raw": plan})
	code, out, errOut := runCLI(t, "--dir", dir, "plan", "validate", "raw")
	if code != exitOK || !strings.Contains(out+errOut, "not valid UTF-8") {
		t.Errorf("plan validate = %d %q %q, want valid with a warning about the title's encoding", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "--dir", dir, "start-work", "raw")
	if code != exitOK {
		t.Fatalf("start-work on a plan with Latin-1 bytes = %d %q", code, errOut)
	}
	got, err := os.ReadFile(filepath.Join(dir, "out.bin"))
	if err != nil || string(got) != "a\xe9b" {
		t.Errorf("the block wrote %q (%v), want the bytes a 0xE9 b", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "second.bin")); err != nil {
		t.Errorf("the unnumbered task with a Latin-1 title did not run: %v", err)
	}
}

func TestNULInABlockIsReportedByValidate(t *testing.T) {
	plan := "# Nul\n\n## TODOs\n\n- [ ] 1. Nul\n  ```sh\n  echo a\x00b\n  ```\n"
	dir := project(t, map[string]string{"nul": plan})
	code, out, _ := runCLI(t, "--dir", dir, "plan", "validate", "nul")
	if code != exitFailed || !strings.Contains(out, "NUL byte") || !strings.Contains(out, ":7:") {
		t.Errorf("plan validate = %d %q, want an error about the NUL byte on line 7", code, out)
	}
}

func TestSymlinkedPlansDirectoryIsRefused(t *testing.T) {
	dir := project(t, nil)
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "ok.md"), []byte(okPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	plansDir := filepath.Join(dir, ".weave", "plans")
	if err := os.Remove(plansDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, plansDir); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"plan", "list"}, {"start-work", "ok"}, {"status"}} {
		code, _, errOut := runCLI(t, append([]string{"--dir", dir}, args...)...)
		if code == exitOK || !strings.Contains(errOut, "symbolic link") {
			t.Errorf("%s with a symlinked plans directory = %d %q, want a refusal", strings.Join(args, " "), code, errOut)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(elsewhere, "ok.md")); string(b) != okPlan {
		t.Errorf("the plan outside the project was changed:\n%s", b)
	}
}

func TestConfigThatIsNotARegularFileOrTooLarge(t *testing.T) {
	tests := []struct {
		name string
		make func(path string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file"},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file"},
		{"huge", func(p string) error {
			return os.WriteFile(p, []byte("log:\n  level: info\n"+strings.Repeat("# padding\n", 200_000)), 0o644)
		}, "larger than 1 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, map[string]string{"ok": okPlan})
			path := filepath.Join(dir, ".weave", "config.yaml")
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runCLI(t, "--dir", dir, "config", "show")
			if code == exitOK || !strings.Contains(errOut, tc.want) {
				t.Errorf("config show with config.yaml %s = %d %q, want a refusal saying %q", tc.name, code, errOut, tc.want)
			}
		})
	}
}

func TestRunbookRetriesIsBounded(t *testing.T) {
	dir := project(t, map[string]string{"bad": failPlan})
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("runbook:\n  retries: 1000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "--dir", dir, "start-work", "bad")
	if code == exitOK || !strings.Contains(errOut, "runbook.retries") || !strings.Contains(errOut, "limit of 10") {
		t.Errorf("start-work with runbook.retries 1000000 = %d %q, want a config error naming the limit of 10", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, ".weave", "state.json")); err == nil {
		t.Error("the run started despite the bad config")
	}
}
