//go:build slow

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlowPluginNewHookBuildsAndPasses scaffolds a hook plugin, then vets,
// tests and builds it offline from the module cache, and runs the binary's
// describe. It is slow on a cold build cache: the generated module compiles
// go-plugin and gRPC again.
func TestSlowPluginNewHookBuildsAndPasses(t *testing.T) {
	offlineGo(t)
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "no-force-push")
	code, out, errOut := runCLIWith(t, t.TempDir(), "plugin", "new", "hook", "no-force-push", "--out", dir, "--module", "github.com/me/no-force-push", "--weave-src", root)
	if code != exitOK {
		t.Fatalf("plugin new hook = %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{"created hook plugin no-force-push", "main_test.go", "go build -o /path/to/project/.weave/plugins/no-force-push ."} {
		if !strings.Contains(out, want) {
			t.Errorf("plugin new hook output lacks %q:\n%s", want, out)
		}
	}
	gomod := readFile(t, filepath.Join(dir, "go.mod"))
	for _, want := range []string{"module github.com/me/no-force-push", "replace github.com/weavehq/weave => " + root} {
		if !strings.Contains(gomod, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, gomod)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); err != nil {
		t.Errorf("go mod tidy did not write go.sum: %v", err)
	}

	for _, args := range [][]string{{"vet", "./..."}, {"test", "./..."}, {"build", "-o", "plugin", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the scaffold: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	// The built binary is a weave plugin that describes itself.
	b, err := exec.Command(filepath.Join(dir, "plugin"), "describe").Output()
	if err != nil {
		t.Fatalf("plugin describe: %v", err)
	}
	if !strings.Contains(string(b), `"name": "no-force-push"`) || !strings.Contains(string(b), `"tool.execute.before"`) {
		t.Errorf("plugin describe = %s, want its name and event", b)
	}
}

// TestSlowPluginNewHookFromAnInstalledBinary is `go install` then `weave
// plugin new hook`: the binary alone, away from any weave source tree,
// scaffolds a module whose test passes and which builds, offline.
func TestSlowPluginNewHookFromAnInstalledBinary(t *testing.T) {
	offlineGo(t)
	installed := filepath.Join(t.TempDir(), "bin", "weave")
	if err := os.MkdirAll(filepath.Dir(installed), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(weaveBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(installed, b, 0o755); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cmd := exec.Command(installed, "plugin", "new", "hook", "guard")
	cmd.Dir = work
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("weave plugin new hook guard: %v\n%s", err, out)
	}
	dir := filepath.Join(work, "guard")
	for _, args := range [][]string{{"vet", "./..."}, {"test", "./..."}, {"build", "-o", "plugin", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the scaffold: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	out, err := exec.Command(filepath.Join(dir, "plugin"), "describe").Output()
	if err != nil || !strings.Contains(string(out), `"name": "guard"`) {
		t.Errorf("plugin describe = %s, %v; want its manifest", out, err)
	}
}
