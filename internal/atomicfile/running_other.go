//go:build !unix

package atomicfile

import "os"

// running reports whether process pid exists.
func running(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
