package main

import (
	"os"
	"syscall"
)

// peakRSS is the peak resident memory of an ended process, in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10 // KiB on Linux
	}
	return 0
}
