package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
)

// The size caps are config keys: config show lists each with its default,
// a value out of range is refused naming the key, and one in range shows.
func TestSizeCapsAreConfigKeys(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	code, out, errOut := runCLI(t, "--dir", dir, "config", "show")
	if code != exitOK {
		t.Fatalf("config show = %d %q", code, errOut)
	}
	for _, want := range []string{"max_bytes: 10485760", "backups: 3", "max_value_bytes: 8192", "max_log_bytes: 10485760",
		"max_reason_bytes: 8192", "max_context_bytes: 1048576", "max_in_flight: 64"} {
		if !strings.Contains(out, want) {
			t.Errorf("config show lacks %q", want)
		}
	}
	for _, tc := range []struct{ yaml, key string }{
		{"log:\n  max_bytes: 100\n", "log.max_bytes"},
		{"log:\n  backups: 0\n", "log.backups"},
		{"log:\n  max_value_bytes: 10\n", "log.max_value_bytes"},
		{"runbook:\n  max_log_bytes: 1000\n", "runbook.max_log_bytes"},
		{"hook:\n  max_reason_bytes: 0\n", "hook.max_reason_bytes"},
		{"hook:\n  max_context_bytes: -1\n", "hook.max_context_bytes"},
		{"bus:\n  max_in_flight: 0\n", "bus.max_in_flight"},
	} {
		if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := runCLI(t, "--dir", dir, "config", "show"); code != exitFailed || !strings.Contains(errOut, tc.key) {
			t.Errorf("config show with %q = %d %q, want 1 naming %s", tc.yaml, code, errOut, tc.key)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("bus:\n  max_in_flight: 8\nhook:\n  max_reason_bytes: 512\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "--dir", dir, "config", "show"); code != exitOK || !strings.Contains(out, "max_in_flight: 8") || !strings.Contains(out, "max_reason_bytes: 512") {
		t.Errorf("config show with caps set = %d %q %q, want them shown", code, out, errOut)
	}
}

// The host log rotates at log.max_bytes, keeps log.backups older files and
// cuts each value at log.max_value_bytes.
func TestHostLogBoundsFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Log.MaxBytes, cfg.Log.Backups, cfg.Log.MaxValueBytes = 64<<10, 1, 256
	logger, c, err := openHostLog(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 600 {
		logger.Info("flood", "value", strings.Repeat("y", 4096))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".weave", "logs", "weave.log")
	for _, f := range []string{path, path + ".1"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatalf("%s: %v; want the log rotated at 64 KiB", filepath.Base(f), err)
		}
		if fi.Size() > 64<<10 {
			t.Errorf("%s is %d bytes, want at most log.max_bytes (65536)", filepath.Base(f), fi.Size())
		}
	}
	if _, err := os.Stat(path + ".2"); err == nil {
		t.Error("weave.log.2 exists with log.backups 1")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n := len(sc.Text()); n > 1024 {
			t.Fatalf("a log line is %d bytes; want its 4 KiB value cut at log.max_value_bytes (256)", n)
		}
	}
}
