//go:build !linux

package supervisor

import "syscall"

// pluginSysProcAttr has no parent-death signal to ask for off Linux; there
// plugins die with the host through Supervisor.Close only.
func pluginSysProcAttr() *syscall.SysProcAttr { return nil }
