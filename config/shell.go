package config

import (
	"cmp"
	"fmt"
	"os/exec"
)

// CheckShell says whether runbook.shell can be started on this machine. A
// name that parses (sh, bash, bsh) may still name no program; found here,
// it stops a run before its first block instead of failing every block.
func (c *Config) CheckShell() error {
	shell := cmp.Or(c.Runbook.Shell, "sh")
	if _, err := exec.LookPath(shell); err != nil {
		return fmt.Errorf("runbook.shell %q is not a program on this machine (%v): install it, or set runbook.shell to sh or bash", shell, err)
	}
	return nil
}
