package main

import (
	"context"
	"os"
	"testing"

	"github.com/weavehq/weave/plugins"
)

// TestMain lets the test binary stand in for weave when the host re-executes
// itself to serve a built-in plugin, as the real binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == plugins.BuiltinCommand {
		os.Exit(runArgs(context.Background(), SystemStreams(), os.Args[1:]))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
