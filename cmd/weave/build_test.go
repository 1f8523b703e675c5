package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// buildWeave builds the weave binary for tests that run it as a process.
func buildWeave(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "weave")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
