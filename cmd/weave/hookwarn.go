package main

import (
	"fmt"
	"io"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
)

// warnUnrunHooks says, once per command and one short line each, which
// hooks config names that Weave accepts but does not run (an event it does
// not fire, a prompt hook): a settings file pasted from Claude Code loads,
// and the person learns what of it stays idle.
func warnUnrunHooks(w io.Writer, cfg *config.Config) {
	for _, line := range host.UnrunHooks(cfg) {
		fmt.Fprintf(w, "warning: %s\n", line)
	}
}
