package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestUserPluginsFollowXDGDataHome(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("plugin scripts need a unix shell")
	}
	dir := project(t, nil)
	data := t.TempDir()
	pluginDir := filepath.Join(data, "weave", "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginDir, "data-plugin"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A relative XDG_CONFIG_HOME is ignored, as the XDG spec says; it must
	// not decide anything, for config or for plugins.
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("XDG_CONFIG_HOME", "relative/cfg")
	t.Setenv("HOME", t.TempDir())
	var out, errOut bytes.Buffer
	code := runArgs(context.Background(), &Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"--dir", dir, "plugins", "list"})
	if code != exitOK {
		t.Fatalf("plugins list = %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), filepath.Join(pluginDir, "data-plugin")) {
		t.Errorf("plugins list does not show the plugin in $XDG_DATA_HOME/weave/plugins:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "relative")); err == nil {
		t.Error("a relative XDG_CONFIG_HOME was used")
	}
}

func TestStartWorkRemovesCrashLeftovers(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true command:", err)
	}
	// What a weave killed between an atomic write's temp file and its
	// rename leaves beside the state and the plan.
	left := []string{
		filepath.Join(dir, ".weave", fmt.Sprintf(".state.json.tmp%d.123", dead.Process.Pid)),
		filepath.Join(dir, ".weave", "plans", fmt.Sprintf(".ok.md.tmp%d.456", dead.Process.Pid)),
	}
	for _, p := range left {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errOut := runCLI(t, "--dir", dir, "start-work", "ok"); code != exitOK {
		t.Fatalf("start-work = %d\n%s\n%s", code, out, errOut)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("after start-work, the leftover %s is still there", filepath.Base(p))
		}
	}
}
