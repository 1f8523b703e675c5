//go:build slow

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/release.sh builds archives that unpack to a stamped weave, with
// checksums that verify.
func TestSlowReleaseScript(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "release.sh"), "v0.0.0-test")
	cmd.Env = append(os.Environ(), "WEAVE_TARGETS=linux/amd64 windows/amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	dist := filepath.Join(root, "dist")
	defer os.RemoveAll(dist)
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"weave_0.0.0-test_linux_amd64.tar.gz", "weave_0.0.0-test_windows_amd64.zip"} {
		if !strings.Contains(string(sums), a) {
			t.Errorf("SHA256SUMS lacks %s:\n%s", a, sums)
		}
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
	x := t.TempDir()
	if out, err := exec.Command("tar", "-C", x, "-xzf", filepath.Join(dist, "weave_0.0.0-test_linux_amd64.tar.gz")).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	r := runBinary(t, filepath.Join(x, "weave_0.0.0-test_linux_amd64", "weave"), nil, "", "version")
	if !strings.HasPrefix(r.out, "weave v0.0.0-test\n") || !strings.Contains(r.out, "commit: ") || !strings.Contains(r.out, "date: ") {
		t.Errorf("released weave version printed %q, want its version, commit and date", r.out)
	}
}
