package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/weavehq/weave/agents"
)

// LocalShell runs runbook scripts as child processes in the project
// directory. Each script gets its own process group, so that cancelling it
// (Ctrl-C, a timeout) stops everything it started, not only the shell.
type LocalShell struct {
	Dir string
	// Env is appended to the host's environment for every script.
	Env []string
	// Timeout bounds one script; zero means none.
	Timeout time.Duration
	// Grace is how long a cancelled script has between SIGTERM and SIGKILL.
	Grace time.Duration
}

// shellArgv picks the interpreter for a block. Both shells stop at the first
// failing command, as CI runners do, so that a broken step is not hidden by
// a later one that succeeds.
func shellArgv(lang, code string) []string {
	if lang == "sh" {
		return []string{"sh", "-e", "-c", code}
	}
	return []string{"bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", code}
}

// RunScript implements agents.Shell.
func (s *LocalShell) RunScript(ctx context.Context, sc agents.Script, out io.Writer) (agents.ScriptResult, error) {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	argv := shellArgv(sc.Lang, sc.Code)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdin = nil
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = scriptProcAttr()
	// A background child that keeps the output pipe open must not hold the
	// task forever once the block itself has exited.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return agents.ScriptResult{}, fmt.Errorf("start %s: %w", argv[0], err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-done:
		case <-ctx.Done():
			killGroup(cmd.Process.Pid, s.grace(), done)
		}
	}()
	err := cmd.Wait()
	close(done)
	<-stopped
	// Whatever the block left running in its group ends with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return agents.ScriptResult{}, fmt.Errorf("block timed out after %s (runbook.block_timeout)", s.Timeout)
		}
		return agents.ScriptResult{}, ctx.Err()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code := exit.ExitCode()
		if code < 0 {
			code = 128 + int(exit.Sys().(syscall.WaitStatus).Signal())
		}
		return agents.ScriptResult{ExitCode: code}, nil
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return agents.ScriptResult{}, err
	}
	return agents.ScriptResult{}, nil
}

func (s *LocalShell) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return 3 * time.Second
}

// killGroup asks the process group to stop, then forces it after grace.
func killGroup(pid int, grace time.Duration, done <-chan struct{}) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	// Children may outlive the shell; the group kill reaches them too.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

var _ agents.Shell = (*LocalShell)(nil)
