package main

import "testing"

// buildWeave is the weave binary, built once per test process, for tests
// that run it as a process.
func buildWeave(t *testing.T) string {
	t.Helper()
	return weaveBin(t)
}
