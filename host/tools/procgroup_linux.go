package tools

import "syscall"

// scriptProcAttr puts a script in its own process group and, on Linux, has
// the kernel kill it if weave itself dies, so that a killed run does not
// leave its block running.
func scriptProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
