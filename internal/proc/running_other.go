//go:build !unix

package proc

import "os"

// Running reports whether a process with ID pid exists.
func Running(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
