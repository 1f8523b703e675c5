//go:build unix

package plans

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with pid exists. Signal 0 checks
// without sending anything; EPERM means it exists under another user.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
