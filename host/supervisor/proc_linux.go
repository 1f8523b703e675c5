//go:build linux

package supervisor

import "syscall"

// pluginSysProcAttr makes the kernel kill a plugin when the host dies, even
// by SIGKILL. The signal fires when the thread that started the plugin exits;
// Go only ends threads whose goroutine locked them and returned, which the
// supervisor never does, and plugins.Serve also exits at once if its parent
// is already gone.
func pluginSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
