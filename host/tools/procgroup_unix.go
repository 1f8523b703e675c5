//go:build unix

package tools

import (
	"os/exec"
	"syscall"
	"time"
)

// killGroup asks a command's process group to stop, then forces it after
// grace, so that nothing a command started outlives its cancellation.
func killGroup(pid int, grace time.Duration, done <-chan struct{}) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	killGroupNow(pid)
}

// killGroupNow ends whatever is left in a command's process group.
func killGroupNow(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// signalExitCode is the shell's exit code for a command killed by a
// signal: 128 plus the signal's number.
func signalExitCode(exit *exec.ExitError) int {
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return 1
}
