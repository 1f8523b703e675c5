package tools

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/sandbox"
	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolBash, func(ctx context.Context, t *Tools, c call) (plugins.ToolResult, error) {
		return t.bash(ctx, c.caller, c.args)
	})
}

// cappedBuffer keeps the first max bytes written and counts the rest. The
// command's stdout and stderr share it, so writes are serialised.
type cappedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped int64
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

// outputSink is where a command's output goes: w, fed from the command's
// pipe through a buffer of bufs. os/exec copies a pipe into a writer that
// cannot read it with a new 32 KiB buffer each command, which in a run of
// a thousand one-line blocks is most of what the run allocates.
type outputSink struct {
	w    io.Writer
	bufs *sync.Pool
}

func (s *outputSink) Write(p []byte) (int, error) { return s.w.Write(p) }

// ReadFrom copies r to w as io.Copy does, with a buffer of the pool.
func (s *outputSink) ReadFrom(r io.Reader) (int64, error) {
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 32<<10)
		bp = &b
	}
	defer s.bufs.Put(bp)
	// Neither side may take the copy over: r's WriteTo would call this
	// ReadFrom again.
	return io.CopyBuffer(struct{ io.Writer }{s.w}, struct{ io.Reader }{r}, *bp)
}

// shellArgv picks the interpreter: bash (the default) for bash, and
// runbook.shell (sh unless configured) for sh, as a runbook block's info
// string says; errexit stops at the first failing command, as CI runners do,
// so that a broken step is not hidden by a later one.
func (t *Tools) shellArgv(args map[string]any, command string) ([]string, error) {
	shell, err := stringArg(args, argShell, false)
	if err != nil {
		return nil, err
	}
	errexit, err := boolArg(args, argErrexit)
	if err != nil {
		return nil, err
	}
	switch shell {
	case "", "bash":
		return proc.ShellArgv("bash", errexit, command), nil
	case "sh":
		return proc.ShellArgv(cmp.Or(t.cfg.Runbook.Shell, "sh"), errexit, command), nil
	}
	return nil, badArg("shell must be bash or sh, got %q", shell)
}

// callScope is what a host-side caller of a tool adds to one call: where to
// stream a command's output, and the time limit of a runbook block. It lives
// in the host's context, out of a plugin's reach.
type callScope struct {
	output     io.Writer
	timeout    time.Duration
	timeoutSet bool
	handed     *Handed
}

type callScopeKey struct{}

func withCallScope(ctx context.Context, s callScope) context.Context {
	return context.WithValue(ctx, callScopeKey{}, s)
}

// Scope is what the host adds to the calls it makes on an agent's behalf:
// Output receives a command's output as it runs, Timeout (when TimeoutSet)
// bounds a command, as runbook.block_timeout does a block, and Handed, when
// set, is the task a run handed the agent, the only one its plan_check may
// tick (see tickdoor.go).
type Scope struct {
	Output     io.Writer
	Timeout    time.Duration
	TimeoutSet bool
	Handed     *Handed
}

// WithScope returns ctx carrying s for the tool calls made under it.
func WithScope(ctx context.Context, s Scope) context.Context {
	return withCallScope(ctx, callScope{output: s.Output, timeout: s.Timeout, timeoutSet: s.TimeoutSet, handed: s.Handed})
}

func callScopeOf(ctx context.Context) callScope {
	s, _ := ctx.Value(callScopeKey{}).(callScope)
	return s
}

// command is exec.Command(argv...) with the shell's path looked up once per
// Tools: a lookup stats PATH's entries one by one, on every block of a
// runbook, and the shells do not move while weave runs.
func (t *Tools) command(argv []string) *exec.Cmd {
	if path, ok := t.shells.Load(argv[0]); ok {
		return &exec.Cmd{Path: path.(string), Args: argv}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err == nil {
		t.shells.Store(argv[0], cmd.Path)
	}
	return cmd
}

func (t *Tools) bash(ctx context.Context, caller Caller, args map[string]any) (plugins.ToolResult, error) {
	command, err := stringArg(args, argCommand, true)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	argv, err := t.shellArgv(args, command)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	scope := callScopeOf(ctx)
	limit := t.limits.Bash.Timeout
	if scope.timeoutSet {
		limit = scope.timeout
	}
	asked, hasTimeout, err := durationArg(args, argTimeout)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if hasTimeout && (limit <= 0 || asked < limit) {
		limit = asked
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		runCtx, cancel = context.WithTimeout(ctx, limit)
	}
	defer cancel()

	out := &cappedBuffer{max: t.limits.Bash.MaxOutputBytes}
	var sink io.Writer = out
	if scope.output != nil {
		// The run shows the output as it comes; the result keeps the capped copy.
		sink = io.MultiWriter(out, scope.output)
	}
	role := proc.BashTool
	if scope.timeoutSet {
		role = proc.Block
	}
	// A runbook block the host's executor runs, or a verify block its tick
	// door runs, is the person's; everything else is a model's.
	block := (scope.handed != nil && scope.handed.Runbook) || ctx.Value(blockKey{}) != nil
	sb := t.planSandbox(ctx, caller, block)
	if sb.refusal != "" {
		return refused(sb.refusal)
	}
	cmd := t.command(argv)
	cmd.Dir = t.root
	cmd.Env = proc.Env(role, proc.EnvOptions{Hide: t.cfg.CredentialEnv()})
	var boxed *sandbox.Cmd
	if sb.use {
		if boxed, err = t.sandboxed(sb, cmd); err != nil {
			return plugins.ToolResult{}, fmt.Errorf("bash: %w", err)
		}
		cmd = boxed.Cmd
	}
	// One writer for both, so that os/exec gives the command one pipe,
	// read through a buffer these tools keep between calls.
	piped := &outputSink{w: sink, bufs: &t.copyBufs}
	cmd.Stdout, cmd.Stderr = piped, piped
	// A background child that keeps the output pipe open must not hold the
	// call once bash itself has exited where the group cannot be watched.
	cmd.WaitDelay = proc.DefaultGrace
	g, err := t.procs.Start(cmd, role.String()+": "+firstLine(command))
	if err != nil {
		if boxed != nil {
			boxed.Abort()
			err = sandbox.StartError(err)
		}
		return plugins.ToolResult{}, fmt.Errorf("bash: start: %w", err)
	}
	if boxed != nil {
		if err := boxed.Ready(); err != nil {
			_ = g.Wait(ctx)
			return plugins.ToolResult{}, fmt.Errorf("bash: %w", err)
		}
	}
	// The kill sequence runs on a timeout or a cancellation, and whatever the
	// command left running in its group ends with it.
	werr := g.Wait(runCtx)

	text := out.buf.String()
	if out.dropped > 0 {
		text += fmt.Sprintf("\n[output truncated: %d of %d bytes shown (tools.bash.max_output_bytes); filter or redirect the output to see the rest]\n",
			out.buf.Len(), int64(out.buf.Len())+out.dropped)
	}
	if ctx.Err() != nil {
		return plugins.ToolResult{}, fmt.Errorf("bash: %w", ctx.Err())
	}
	if runCtx.Err() != nil {
		source := "tools.bash.timeout"
		switch {
		case hasTimeout && limit == asked:
			source = "the timeout argument"
		case scope.timeoutSet:
			source = "runbook.block_timeout"
		}
		return plugins.ToolResult{Output: text + fmt.Sprintf("\n[command timed out after %s (%s) and was killed with every process it started]\n", limit, source),
			IsError: true, ExitCode: -1}, nil
	}
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		code = exit.ExitCode()
		if code < 0 {
			code = signalExitCode(exit)
		}
	case werr != nil && !errors.Is(werr, exec.ErrWaitDelay):
		return plugins.ToolResult{}, fmt.Errorf("bash: %w", werr)
	}
	if code != 0 {
		text += fmt.Sprintf("\n[exit code %d]\n", code)
	}
	if sb.use && strings.Contains(text, roNote) {
		// The model learns why its write failed, and what it may write.
		text = strings.TrimRight(text, "\n") + "\n" + sb.note + "\n"
	}
	return plugins.ToolResult{Output: text, IsError: code != 0, ExitCode: code}, nil
}

// firstLine names a command by its first line in the process ledger.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
