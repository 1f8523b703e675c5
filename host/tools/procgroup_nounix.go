//go:build !unix

package tools

import (
	"os/exec"
	"syscall"
)

// Without process groups (Windows) a command gets no group of its own;
// internal/proc stops it by killing its process.

func scriptProcAttr() *syscall.SysProcAttr { return nil }

func signalExitCode(*exec.ExitError) int { return 1 }
