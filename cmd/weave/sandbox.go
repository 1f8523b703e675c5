package main

import (
	"context"
	"fmt"
	"io"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/sandbox"
)

// sandboxCheck says which sandbox.mode is in force and whether bash can
// be sandboxed on this machine, and why not. Without a sandbox, auto
// still runs bash (the check passes, and says so); strict refuses it.
func sandboxCheck(ctx context.Context, sc config.SandboxConfig) check {
	if sc.Mode == "off" {
		return check{Name: "sandbox", OK: true, Detail: "off (sandbox.mode): bash runs without a sandbox"}
	}
	err := sandbox.Probe(ctx, sandbox.SelfExe)
	if err == nil {
		return check{Name: "sandbox", OK: true, Detail: fmt.Sprintf("%s (sandbox.mode): bash runs in a sandbox here, network %s", sc.Mode, sc.Network)}
	}
	if sc.Mode == "strict" {
		return check{Name: "sandbox", Detail: fmt.Sprintf("strict (sandbox.mode): bash is refused, no sandbox is possible here: %v", err),
			Fix: "allow unprivileged user namespaces on this machine, or set sandbox.mode: auto to run bash without a sandbox"}
	}
	return check{Name: "sandbox", OK: true, Detail: fmt.Sprintf("auto (sandbox.mode): no sandbox possible here, bash runs without one: %v", err)}
}

// noticeTo writes the tools' messages for the person to w, a line each.
func noticeTo(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintln(w, msg) }
}
