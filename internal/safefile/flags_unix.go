//go:build unix

package safefile

import (
	"errors"
	"syscall"
)

// openFlags never block on a pipe and never leak the descriptor into a
// child; noFollow makes the kernel refuse a symbolic link.
const (
	openFlags = syscall.O_NONBLOCK | syscall.O_CLOEXEC
	noFollow  = syscall.O_NOFOLLOW
)

// isLoop reports the error the kernel gives for a link under O_NOFOLLOW.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
