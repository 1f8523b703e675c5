//go:build !unix

package plans

import "os"

// processAlive reports whether a process with pid exists. Where there are
// no signals (Windows), finding the process opens a handle to it, which
// fails for a process that has exited.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
