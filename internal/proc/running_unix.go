//go:build unix

package proc

import (
	"errors"
	"syscall"
)

// Running reports whether a process with ID pid exists (it may belong to
// another user).
func Running(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
