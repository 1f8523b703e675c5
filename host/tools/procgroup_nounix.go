//go:build !unix

package tools

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Without process groups (Windows) a command is stopped by killing its
// process; the children it started are not tracked.

func scriptProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int, grace time.Duration, done <-chan struct{}) { killGroupNow(pid) }

func killGroupNow(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
		_ = p.Release()
	}
}

func signalExitCode(*exec.ExitError) int { return 1 }
