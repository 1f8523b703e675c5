package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/host/supervisor"
	"github.com/weavehq/weave/plugins"
)

// repoRoot is the root of the weave source tree this test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isWeaveSrc(d) {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no weave go.mod above %s", wd)
		}
	}
}

// buildExample builds examples/hooks/<name> to dest, with -race when this
// test binary has it, so that the build reuses the packages compiled for
// the test instead of compiling gRPC again.
func buildExample(t *testing.T, name, dest string) {
	t.Helper()
	buildGo(t, "./examples/hooks/"+name, dest)
}

// buildGo builds the package pkg (a path from the repository root) to dest,
// as buildExample does.
func buildGo(t *testing.T, pkg, dest string) {
	t.Helper()
	args := []string{"build", "-o", dest}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
}

func writeExecutable(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestPluginsList(t *testing.T) {
	dir := project(t, nil)
	xdg := t.TempDir()
	bin := filepath.Join(dir, ".weave", "plugins", "go-block-rm")
	buildExample(t, "go-block-rm", bin)
	// The same binary under another file name, in the user's directory.
	buildDir := t.TempDir()
	userBin := filepath.Join(xdg, "weave", "plugins", "rm-guard")
	if err := os.MkdirAll(filepath.Dir(userBin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(bin, userBin); err != nil {
		buildExample(t, "go-block-rm", userBin)
	}
	// A plugin that is not one, and one listed in config.
	writeExecutable(t, filepath.Join(dir, ".weave", "plugins", "garbage"), "#!/bin/sh\necho 'this is not JSON'\n")
	// A hook whose matcher names a tool by its Claude Code name.
	writeExecutable(t, filepath.Join(dir, ".weave", "plugins", "badtools"), "#!/bin/sh\necho '{\"name\":\"badtools\",\"kind\":\"hook\",\"events\":[\"tool.execute.before\"],\"tools\":{\"tool.execute.before\":[\"Bash\"]},\"protocol_version\":1}'\n")
	writeExecutable(t, filepath.Join(buildDir, "future"), "#!/bin/sh\necho '{\"name\":\"future\",\"kind\":\"hook\",\"events\":[\"session.start\"],\"protocol_version\":99}'\n")
	cfg := "plugins:\n  - name: future\n    path: " + filepath.Join(buildDir, "future") + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLIWith(t, xdg, "--dir", dir, "plugins", "list", "--json")
	if code != exitOK {
		t.Fatalf("plugins list = %d, stderr %q", code, errOut)
	}
	var list []pluginListing
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("plugins list --json = %q: %v", out, err)
	}
	byName := map[string]pluginListing{}
	var names []string
	for _, l := range list {
		byName[l.Name] = l
		names = append(names, l.Name)
	}

	want := pluginListing{
		Name: "go-block-rm", Kind: plugins.KindHook, Version: "1.0.0",
		Events: []string{plugins.EventToolExecuteBefore}, Priority: 10,
		Source: "project", Path: bin, ProtocolVersion: plugins.ProtocolVersion, Status: pluginOK,
	}
	if diff := cmp.Diff(want, byName["go-block-rm"]); diff != "" {
		t.Errorf("go-block-rm listing mismatch (-want +got):\n%s", diff)
	}
	if l := byName["rm-guard"]; l.Source != "user" || l.Status != pluginOK || l.InfoName != "go-block-rm" {
		t.Errorf("rm-guard = %+v, want a user plugin, ok, describing itself as go-block-rm", l)
	}
	if l := byName["garbage"]; l.Status != pluginError || !strings.Contains(l.Error, "no JSON manifest") {
		t.Errorf("garbage = %+v, want status error saying it printed no manifest", l)
	}
	if l := byName["badtools"]; l.Status != pluginError || !strings.Contains(l.Error, `unknown tool "Bash"`) {
		t.Errorf("badtools = %+v, want status error naming the unknown tool", l)
	}
	if l := byName["future"]; l.Source != "config" || l.Status != pluginError || !strings.Contains(l.Error, "protocol version 99") {
		t.Errorf("future = %+v, want a config plugin in error over its protocol version", l)
	}
	// The built-ins run as this test binary, re-executed, as weave re-executes itself.
	if l := byName["weave.start-work"]; l.Source != "builtin" || l.Kind != plugins.KindHook || l.Status != pluginOK || len(l.Events) == 0 {
		t.Errorf("weave.start-work = %+v, want an ok built-in hook with events", l)
	}
	if l := byName["weave.agent.tapestry"]; l.Source != "builtin" || l.Kind != plugins.KindAgent || l.Role != "tapestry" || l.Status != pluginOK {
		t.Errorf("weave.agent.tapestry = %+v, want an ok built-in agent with role tapestry", l)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("plugins list is not sorted by name: %q before %q", names[i-1], names[i])
		}
	}

	if !strings.Contains(errOut, "3 plugin(s) could not describe themselves") {
		t.Errorf("plugins list stderr = %q, want a count of the broken plugins", errOut)
	}

	// The table says the same, and points at the broken ones.
	var table bytes.Buffer
	writePluginList(&table, list)
	for _, want := range []string{"NAME", "STATUS", "go-block-rm", "tool.execute.before", "rm-guard (go-block-rm)", "tapestry", "garbage: plugin \"garbage\""} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("plugins list table lacks %q:\n%s", want, table.String())
		}
	}
}

func TestPluginsListOutsideAProject(t *testing.T) {
	xdg := t.TempDir()
	writeExecutable(t, filepath.Join(xdg, "weave", "plugins", "mine"),
		"#!/bin/sh\necho '{\"name\":\"mine\",\"version\":\"2\",\"kind\":\"hook\",\"events\":[\"session.end\"],\"protocol_version\":"+fmt.Sprint(plugins.ProtocolVersion)+"}'\n")
	code, out, errOut := runCLIWith(t, xdg, "--dir", t.TempDir(), "plugins", "list", "--json")
	if code != exitOK {
		t.Fatalf("plugins list outside a project = %d, stderr %q", code, errOut)
	}
	var list []pluginListing
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("plugins list --json = %q: %v", out, err)
	}
	var mine *pluginListing
	builtins := 0
	for i, l := range list {
		if l.Name == "mine" {
			mine = &list[i]
		}
		if l.Source == "builtin" {
			builtins++
		}
	}
	if mine == nil || mine.Status != pluginOK || mine.Version != "2" || mine.Source != "user" {
		t.Errorf("mine = %+v, want the user's plugin, ok", mine)
	}
	if builtins == 0 {
		t.Error("no built-ins listed outside a project")
	}
}

func TestPluginListingChecks(t *testing.T) {
	entry := func(kind plugins.Kind) supervisor.Entry {
		return supervisor.Entry{Name: "p", Path: "/x/p", Kind: kind, Source: "project"}
	}
	ok := plugins.Manifest{Info: plugins.Info{Name: "p", Kind: plugins.KindHook, Events: []string{plugins.EventSessionStart}}, ProtocolVersion: plugins.ProtocolVersion}
	tests := []struct {
		name   string
		entry  supervisor.Entry
		m      func(plugins.Manifest) plugins.Manifest
		errHas string
	}{
		{"ok", entry(""), func(m plugins.Manifest) plugins.Manifest { return m }, ""},
		{"kind mismatch", entry(plugins.KindAgent), func(m plugins.Manifest) plugins.Manifest { return m }, `says it is a "hook" plugin, listed as "agent"`},
		{"unknown kind", entry(""), func(m plugins.Manifest) plugins.Manifest { m.Kind = "tool"; return m }, `unknown kind "tool"`},
		{"old protocol", entry(""), func(m plugins.Manifest) plugins.Manifest { m.ProtocolVersion = 0; return m }, "protocol version 0"},
		{"no events", entry(""), func(m plugins.Manifest) plugins.Manifest { m.Events = nil; return m }, "handles no events"},
		{"no name", entry(""), func(m plugins.Manifest) plugins.Manifest { m.Name = ""; return m }, "no name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := listing(tc.entry, tc.m(ok), nil)
			if tc.errHas == "" {
				if l.Status != pluginOK || l.Error != "" {
					t.Errorf("listing(%s) = %s %q, want ok", tc.name, l.Status, l.Error)
				}
				return
			}
			if l.Status != pluginError || !strings.Contains(l.Error, tc.errHas) {
				t.Errorf("listing(%s) = %s %q, want error mentioning %q", tc.name, l.Status, l.Error, tc.errHas)
			}
		})
	}
}
