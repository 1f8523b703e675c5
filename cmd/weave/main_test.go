package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/weavehq/weave/host/mcp/mcptest"
	"github.com/weavehq/weave/plugins/pluginhost"
)

// TestMain lets the test binary stand in for weave when the host re-executes
// itself to serve a built-in plugin, as the real binary does, and be the
// runbook floor of the benchmarks.
func TestMain(m *testing.M) {
	// A stdio MCP server for the MCP tests, when one is asked for.
	mcptest.ServeIfAsked()
	if os.Getenv(floorEnv) != "" {
		// The runbook floor of the benchmarks: plan and state paths.
		if err := runFloor(os.Args[1], os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if out := os.Getenv(peakRSSEnv); out != "" {
		// A small launcher, so that the measured process's peak RSS does
		// not start from the test process's (see runWeaveRSS).
		os.Exit(launchMeasured(out, os.Args[1:]))
	}
	if len(os.Args) > 1 && os.Args[1] == pluginhost.BuiltinCommand {
		os.Exit(runArgs(context.Background(), SystemStreams(), os.Args[1:]))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
