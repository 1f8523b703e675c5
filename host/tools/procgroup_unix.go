//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// signalExitCode is the shell's exit code for a command killed by a
// signal: 128 plus the signal's number.
func signalExitCode(exit *exec.ExitError) int {
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return 1
}
