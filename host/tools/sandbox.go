package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/sandbox"
	"github.com/weavehq/weave/plugins"
)

// The sandbox of the bash tool (docs/sandbox.md, internal/sandbox): what
// a bash call sees is decided here, from the caller's row and the config
// (sandbox.*); internal/sandbox builds it.

// Sandbox modes (sandbox.mode).
const (
	sandboxAuto   = "auto"
	sandboxStrict = "strict"
	sandboxOff    = "off"
)

// roNote is the mark of a write the sandbox refused, as the C library
// words EROFS; a result that holds it ends with the sandbox's note.
const roNote = "Read-only file system"

// sandboxing is the sandbox state of one Tools: whether the machine
// allows one, probed once, and the one warning of a run without it.
type sandboxing struct {
	probe func(context.Context) error

	once   sync.Once
	err    error // why there is no sandbox here; nil: there is one
	exe    string
	warned sync.Once
	notice func(string)
}

// WithSandboxProbe replaces the probe of whether bash can be sandboxed
// here (a test's way to simulate a machine without one).
func WithSandboxProbe(probe func(context.Context) error) Option {
	return func(t *Tools) { t.sb.probe = probe }
}

// WithNotice sets where messages for the person go (the one warning of a
// run whose bash calls are not sandboxed); the default is the log only.
func WithNotice(f func(string)) Option { return func(t *Tools) { t.sb.notice = f } }

// SandboxStatus says whether bash calls are sandboxed: the mode in force
// and, unless it is off, why the machine cannot sandbox (nil: it can). It
// probes once per Tools.
func (t *Tools) SandboxStatus(ctx context.Context) (mode string, unavailable error) {
	mode = t.cfg.Sandbox.Mode
	if mode == "" {
		mode = sandboxAuto
	}
	if mode == sandboxOff {
		return mode, nil
	}
	return mode, t.sandboxAvailable(ctx)
}

// sandboxAvailable probes, once, whether a sandbox can be built here.
func (t *Tools) sandboxAvailable(ctx context.Context) error {
	t.sb.once.Do(func() {
		// weave's own binary, even if its file was replaced since it
		// started (an upgrade during a run).
		exe := sandbox.SelfExe
		t.sb.exe = exe
		probe := t.sb.probe
		if probe == nil {
			probe = func(ctx context.Context) error { return sandbox.Probe(ctx, exe) }
		}
		t.sb.err = probe(context.WithoutCancel(ctx))
		if t.sb.err != nil {
			t.log.Warn("bash cannot be sandboxed here", "err", t.sb.err)
		}
	})
	return t.sb.err
}

// sandboxPlan is how one bash call runs: sandboxed with spec, or not
// (use false), or refused (refusal).
type sandboxPlan struct {
	use     bool
	spec    sandbox.Spec
	note    string // the note of a write the sandbox refused
	refusal string
}

// planSandbox decides how the bash call of caller runs. block is a plan's
// runbook or verify block the host runs, which the sandbox holds only
// with sandbox.blocks.
func (t *Tools) planSandbox(ctx context.Context, caller Caller, block bool) sandboxPlan {
	// A block the sandbox does not hold runs without asking whether the
	// machine could sandbox it: the probe is a process.
	if block && !t.cfg.Sandbox.Blocks {
		return sandboxPlan{}
	}
	mode, unavailable := t.SandboxStatus(ctx)
	if mode == sandboxOff {
		return sandboxPlan{}
	}
	if unavailable != nil {
		if mode == sandboxStrict {
			return sandboxPlan{refusal: fmt.Sprintf("refused by sandbox.mode strict: bash cannot be sandboxed on this machine (%v)", unavailable)}
		}
		t.sb.warned.Do(func() {
			if t.sb.notice != nil {
				t.sb.notice(fmt.Sprintf("warning: bash runs without a sandbox: %v (set sandbox.mode: off to silence this, strict to refuse bash instead)", unavailable))
			}
		})
		return sandboxPlan{}
	}
	spec := sandbox.Spec{Root: t.root, Network: t.cfg.Sandbox.Network == "allow", Writable: t.sandboxWritable()}
	writable, scope := true, ""
	if !block {
		writable, scope = t.bashWrites(caller)
	}
	spec.Layers = []sandbox.Layer{{Rel: ".", Writable: writable}}
	if scope != "" && scope != layout.DirName {
		spec.Layers = append(spec.Layers, sandbox.Layer{Rel: scope, Writable: true})
	}
	// The host-owned files, read-only again over the project: all of
	// .weave/ but the plans (whose checkboxes the tick door guards), Claude
	// settings, MCP servers, the hook scripts the config names.
	spec.Layers = append(spec.Layers, sandbox.Layer{Rel: layout.DirName})
	if writable || scope == layout.DirName {
		spec.Layers = append(spec.Layers, sandbox.Layer{Rel: layout.DirName + "/plans", Writable: true})
	}
	spec.Layers = append(spec.Layers, sandbox.Layer{Rel: ".claude"}, sandbox.Layer{Rel: ".mcp.json"})
	for _, s := range hookScripts(t.root, t.cfg) {
		spec.Layers = append(spec.Layers, sandbox.Layer{Rel: s})
	}
	extra := ""
	if len(spec.Writable) > 0 {
		extra = ", and sandbox.writable"
	}
	var note string
	switch {
	case writable:
		note = fmt.Sprintf("read-only sandbox: bash may write only the project and a private /tmp%s; the project's host-owned files (%s/ but %s/plans/, .claude/, .mcp.json, hook scripts) and the rest of the file system are read-only", extra, layout.DirName, layout.DirName)
	case scope != "":
		note = fmt.Sprintf("read-only sandbox: %s may write only %s/plans/ and a private /tmp%s; the rest of the project and of the file system is read-only", caller.Role(), layout.DirName, extra)
	default:
		note = fmt.Sprintf("read-only sandbox: %s has no write or edit, so the project and the whole file system are read-only in its bash (only a private /tmp is writable%s)", caller.Role(), extra)
	}
	return sandboxPlan{use: true, spec: spec, note: note}
}

// bashWrites says what caller's bash may write of the project: all of it
// (writable) when its chain allows write or edit, the directory of a
// write scope along the chain (Pattern's .weave) when one limits it, and
// nothing for a read-only role (Thread, Spindle, Weft, Warp, any row
// without write and edit).
func (t *Tools) bashWrites(caller Caller) (writable bool, scope string) {
	chain := caller.Path()
	if _, p := t.gate.chainProblem(chain); p != "" {
		return false, ""
	}
	if t.gate.ceiling(chain, plugins.ToolWrite) != "" && t.gate.ceiling(chain, plugins.ToolEdit) != "" {
		return false, ""
	}
	var s agents.Scope
	for _, name := range chain {
		if rs := t.gate.rows[name].Role.WriteScope; !rs.IsZero() {
			s = rs
		}
	}
	if s.IsZero() {
		return true, ""
	}
	return false, filepath.ToSlash(filepath.Clean(s.Dir))
}

// sandboxWritable is sandbox.writable with ~/ expanded.
func (t *Tools) sandboxWritable() []string {
	var out []string
	home, _ := os.UserHomeDir()
	for _, p := range t.cfg.Sandbox.Writable {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home == "" {
				continue
			}
			p = filepath.Join(home, rest)
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}

// sandboxed returns the command that runs argv in the sandbox of plan,
// with env, in the project.
func (t *Tools) sandboxed(plan sandboxPlan, cmd *exec.Cmd) (*sandbox.Cmd, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	spec := plan.spec
	spec.Path, spec.Argv, spec.Env, spec.Dir = cmd.Path, cmd.Args, cmd.Env, cmd.Dir
	return sandbox.Command(t.sb.exe, spec)
}

// blockKey marks the context of a verify block the tick door runs.
type blockKey struct{}
