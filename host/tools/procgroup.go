package tools

import (
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
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
