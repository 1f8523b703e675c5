//go:build unix && !linux

package tools

import "syscall"

// scriptProcAttr puts a script in its own process group.
func scriptProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
