package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type change struct {
	c   *Config
	s   *Sources
	err error
}

// startWatch runs Watch until the test ends and returns its reports.
func startWatch(t *testing.T, opts Options) <-chan change {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan change, 256)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, opts, func(c *Config, s *Sources, err error) {
			changes <- change{c, s, err}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Watch() = %v after cancel, want nil", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("Watch() did not return after its context was cancelled")
		}
	})
	return changes
}

// waitFor reads reports until one satisfies ok; the deadline only guards
// against a hang.
func waitFor(t *testing.T, changes <-chan change, what string, ok func(change) bool) change {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case ch := <-changes:
			if ok(ch) {
				return ch
			}
		case <-deadline:
			t.Fatalf("Watch: no report of %s", what)
		}
	}
}

func level(want string) func(change) bool {
	return func(ch change) bool { return ch.err == nil && ch.c.Log.Level == want }
}

func TestWatch(t *testing.T) {
	e := newEnv(t)
	path := e.projectFile("config.yaml")
	changes := startWatch(t, e.opts())

	waitFor(t, changes, "the initial config", level("info"))

	write(t, path, "log: {level: debug}\n")
	got := waitFor(t, changes, "a created file", level("debug"))
	if l, o := got.s.Of("log.level"); l != LayerProject || o != path {
		t.Errorf("after create: Of(log.level) = %s, %q, want project, %q", l, o, path)
	}

	write(t, path, "log: {level: warn}\n")
	waitFor(t, changes, "a modified file", level("warn"))

	tmp := path + ".tmp"
	write(t, tmp, "log: {level: error}\n")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changes, "a file replaced by rename", level("error"))

	write(t, path, "log: {level: loud}\n")
	bad := waitFor(t, changes, "an invalid file", func(ch change) bool { return ch.err != nil })
	if !strings.Contains(bad.err.Error(), path+": log.level:") || bad.c != nil {
		t.Errorf("after invalid write: report = %v, %v; want nil config and an error naming %s", bad.c, bad.err, path)
	}

	write(t, e.userFile("config.yaml"), "log: {format: json}\n")
	write(t, path, "log: {level: debug}\n")
	waitFor(t, changes, "the user file and the fixed project file", func(ch change) bool {
		return ch.err == nil && ch.c.Log.Level == "debug" && ch.c.Log.Format == "json"
	})

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changes, "a removed file", level("info"))
}

func TestWatchDirectoryCreatedLater(t *testing.T) {
	root := t.TempDir()
	opts := Options{
		ProjectDir:    filepath.Join(root, "proj"), // no .weave yet
		UserConfigDir: filepath.Join(root, "home", ".config", "weave"),
		Environ:       []string{},
	}
	changes := startWatch(t, opts)
	waitFor(t, changes, "the initial config", level("info"))

	if err := os.MkdirAll(opts.ProjectConfigDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(opts.ProjectConfigDir(), "config.toml"), "[log]\nlevel = \"warn\"\n")
	waitFor(t, changes, "a file in a new project directory", level("warn"))

	if err := os.MkdirAll(opts.UserConfigDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(opts.UserConfigDir, "config.json"), `{"bus": {"queue_size": 7}}`)
	waitFor(t, changes, "a file in a new user directory", func(ch change) bool {
		return ch.err == nil && ch.c.Bus.QueueSize == 7 && ch.c.Log.Level == "warn"
	})
}

func TestWatchIgnoresOtherFiles(t *testing.T) {
	e := newEnv(t)
	changes := startWatch(t, e.opts())
	waitFor(t, changes, "the initial config", level("info"))

	// Noise in the watched directory must not produce a report; the next
	// report must be the real change.
	write(t, e.projectFile("state.json"), "{}")
	write(t, e.projectFile("config.yaml.swp"), "junk")
	write(t, e.projectFile("config.yaml"), "runbook: {retries: 2}\n")
	got := waitFor(t, changes, "the next report", func(change) bool { return true })
	if got.err != nil || got.c.Runbook.Retries != 2 {
		t.Errorf("first report after noise = %+v, %v; want retries 2", got.c, got.err)
	}
}

func TestRelevant(t *testing.T) {
	targets := []string{"/p/.weave", "/home/u/.config/weave"}
	tests := []struct {
		path string
		want bool
	}{
		{"/p/.weave/config.yaml", true},
		{"/p/.weave/config.toml", true},
		{"/home/u/.config/weave/config.json", true},
		{"/p/.weave", true},       // the directory itself appeared or went
		{"/home/u/.config", true}, // a parent on the way
		{"/p/.weave/state.json", false},
		{"/p/.weave/config.yaml.tmp", false},
		{"/p/.weave/plans/config.yaml", false},
		{"/p/other", false},
		{"/p/.weaver", false},
	}
	for _, tt := range tests {
		if got := relevant(tt.path, targets); got != tt.want {
			t.Errorf("relevant(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
