package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weavehq/weave/plugins"
)

// bashGrace is how long a command that timed out or was cancelled has
// between SIGTERM and SIGKILL of its process group.
const bashGrace = time.Second

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

// bashEnv is the host's environment without its secrets: the model's API
// key and anything named like a key, token or password stay in weave.
func (t *Tools) bashEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if isSecretName(k) || (t.cfg.Model.APIKeyEnv != "" && k == t.cfg.Model.APIKeyEnv) {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (t *Tools) bash(ctx context.Context, args map[string]any) (plugins.ToolResult, error) {
	command, err := stringArg(args, argCommand, true)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	limit := t.limits.Bash.Timeout
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
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", command)
	cmd.Dir = t.root
	cmd.Env = t.bashEnv()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = scriptProcAttr()
	// A background child that keeps the output pipe open must not hold the
	// call once bash itself has exited; the group kill below ends it.
	cmd.WaitDelay = bashGrace
	if err := cmd.Start(); err != nil {
		return plugins.ToolResult{}, fmt.Errorf("bash: start: %w", err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-done:
		case <-runCtx.Done():
			killGroup(cmd.Process.Pid, bashGrace, done)
		}
	}()
	werr := cmd.Wait()
	close(done)
	<-stopped
	// Whatever the command left running in its group ends with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

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
		if hasTimeout && limit == asked {
			source = "the timeout argument"
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
			code = 128 + int(exit.Sys().(syscall.WaitStatus).Signal())
		}
	case werr != nil && !errors.Is(werr, exec.ErrWaitDelay):
		return plugins.ToolResult{}, fmt.Errorf("bash: %w", werr)
	}
	if code != 0 {
		text += fmt.Sprintf("\n[exit code %d]\n", code)
	}
	return plugins.ToolResult{Output: text, IsError: code != 0, ExitCode: code}, nil
}
