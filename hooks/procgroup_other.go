//go:build !unix

package hooks

import "os/exec"

// Without process groups only the shell itself is killed on timeout.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(*exec.Cmd) {}
