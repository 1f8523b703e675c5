package main

import (
	"go/format"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// offlineGo makes go (and the scaffold's go mod tidy) use only the module
// cache, which holds every module weave needs.
func offlineGo(t *testing.T) {
	t.Helper()
	t.Setenv("GOPROXY", "off")
	// Checksums come from the module cache, not the network.
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOFLAGS", "-mod=mod -modcacherw")
	t.Setenv("GOWORK", "off")
	t.Setenv(weaveSrcEnv, "")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPluginNewHookFiles(t *testing.T) {
	offlineGo(t)
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "guard")
	code, out, errOut := runCLIWith(t, t.TempDir(), "plugin", "new", "hook", "guard", "--out", dir, "--weave-src", root, "--skip-tidy")
	if code != exitOK {
		t.Fatalf("plugin new hook = %d %q %q", code, out, errOut)
	}
	for _, f := range []string{"go.mod", "main.go", "main_test.go", "README.md"} {
		body := readFile(t, filepath.Join(dir, f))
		if strings.Contains(body, "{{") || strings.Contains(body, "<no value>") {
			t.Errorf("%s has an unrendered template field:\n%s", f, body)
		}
		// The Go files parse and are gofmt-clean; that they build and pass
		// is TestSlowPluginNewHookBuildsAndPasses's job.
		if strings.HasSuffix(f, ".go") {
			formatted, err := format.Source([]byte(body))
			if err != nil {
				t.Errorf("%s does not parse: %v", f, err)
			} else if string(formatted) != body {
				t.Errorf("%s is not gofmt-clean", f)
			}
		}
	}
	if got := goModDirective(filepath.Join(dir, "go.mod"), "module"); got != "example.com/guard" {
		t.Errorf("default module = %q, want example.com/guard", got)
	}
	if got, want := goModDirective(filepath.Join(dir, "go.mod"), "go"), goModDirective(filepath.Join(root, "go.mod"), "go"); got != want {
		t.Errorf("go directive = %q, want weave's %q", got, want)
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "README.md")), "go build -o /path/to/project/.weave/plugins/guard .") {
		t.Error("README lacks the install step")
	}
	if !strings.Contains(out, "go mod tidy") {
		t.Errorf("with --skip-tidy the next steps = %q, want go mod tidy among them", out)
	}
}

func TestPluginNewHookWeaveSrcFromEnv(t *testing.T) {
	offlineGo(t)
	root := repoRoot(t)
	t.Setenv(weaveSrcEnv, root)
	dir := filepath.Join(t.TempDir(), "h")
	if code, out, errOut := runCLIWith(t, t.TempDir(), "plugin", "new", "hook", "h", "--out", dir, "--skip-tidy"); code != exitOK {
		t.Fatalf("plugin new hook = %d %q %q", code, out, errOut)
	}
	if gomod := readFile(t, filepath.Join(dir, "go.mod")); !strings.Contains(gomod, "=> "+root) {
		t.Errorf("go.mod does not replace weave with $%s:\n%s", weaveSrcEnv, gomod)
	}
}

func TestPluginNewHookWithoutWeaveSrc(t *testing.T) {
	offlineGo(t)
	// Neither the test binary's directory nor this one is under a weave
	// tree, as for an installed binary: the module's plugin packages come
	// from the binary, and go mod tidy succeeds offline.
	t.Chdir(t.TempDir())
	code, out, errOut := runCLIWith(t, t.TempDir(), "plugin", "new", "hook", "lonely")
	if code != exitOK {
		t.Fatalf("plugin new hook = %d %q %q", code, out, errOut)
	}
	gomod := readFile(t, filepath.Join("lonely", "go.mod"))
	if !strings.Contains(gomod, "replace github.com/weavehq/weave => ./weave-sdk") {
		t.Errorf("go.mod does not replace weave with the written packages:\n%s", gomod)
	}
	for _, f := range []string{"go.sum", "weave-sdk/go.mod", "weave-sdk/plugins/serve.go", "weave-sdk/plugins/plugintest", "weave-sdk/LICENSE"} {
		if _, err := os.Stat(filepath.Join("lonely", f)); err != nil {
			t.Errorf("the scaffold lacks %s: %v", f, err)
		}
	}
	if !strings.Contains(out, "weave-sdk/ (the weave module's plugin packages") {
		t.Errorf("output does not say where the packages came from:\n%s", out)
	}
}

// A scaffold whose go mod tidy fails leaves nothing behind: no directory,
// no half-written go.mod.
func TestPluginNewHookFailureLeavesNothing(t *testing.T) {
	offlineGo(t)
	t.Setenv("GOMODCACHE", t.TempDir()) // empty: tidy cannot find a module
	parent := t.TempDir()
	t.Chdir(parent)
	code, _, errOut := runCLIWith(t, t.TempDir(), "plugin", "new", "hook", "broken")
	if code == exitOK || !strings.Contains(errOut, "nothing was written") {
		t.Fatalf("plugin new hook with no module cache = %d %q, want a failure that says nothing was written", code, errOut)
	}
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}

func TestPluginNewHookRefuses(t *testing.T) {
	offlineGo(t)
	root := repoRoot(t)
	full := t.TempDir()
	keep := filepath.Join(full, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		errHas string
	}{
		{"non-empty dir", []string{"ok", "--out", full}, exitFailed, "is not empty"},
		{"a file", []string{"ok", "--out", file}, exitFailed, "is not a directory"},
		{"bad name", []string{"../evil"}, exitUsage, "plugin name"},
		{"name with space", []string{"my hook"}, exitUsage, "plugin name"},
		{"bad module", []string{"ok", "--out", filepath.Join(t.TempDir(), "x"), "--module", "github.com/me//x"}, exitUsage, "not a module path"},
		{"not weave", []string{"ok", "--out", filepath.Join(t.TempDir(), "x"), "--weave-src", t.TempDir()}, exitFailed, "no go.mod of module github.com/weavehq/weave"},
		{"no name", nil, exitUsage, "takes 1 argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"plugin", "new", "hook", "--skip-tidy", "--weave-src", root}, tc.args...)
			code, _, errOut := runCLIWith(t, t.TempDir(), args...)
			if code != tc.code || !strings.Contains(errOut, tc.errHas) {
				t.Errorf("plugin new hook %v = %d %q, want %d mentioning %q", tc.args, code, errOut, tc.code, tc.errHas)
			}
		})
	}
	if got := readFile(t, keep); got != "mine" {
		t.Errorf("a file in the refused directory changed to %q", got)
	}
	if des, _ := os.ReadDir(full); len(des) != 1 {
		t.Errorf("the refused directory holds %d entries, want the 1 it had", len(des))
	}
}
