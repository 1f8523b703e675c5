package proc

import (
	"path/filepath"
	"strings"
)

// ShellArgv is the command line that runs script under shell (a name on
// PATH or a path): bash without its startup files (--noprofile --norc), zsh
// without them (-f), any other shell as it is. errexit stops at the first
// failing command (-e), as CI runners do, and a failing stage of a pipeline
// fails it (-o pipefail) in the shells that have the option.
func ShellArgv(shell string, errexit bool, script string) []string {
	argv := []string{shell}
	base := strings.TrimSuffix(filepath.Base(shell), ".exe")
	switch base {
	case "bash":
		argv = append(argv, "--noprofile", "--norc")
	case "zsh":
		argv = append(argv, "-f")
	}
	if errexit {
		argv = append(argv, "-e")
		switch base {
		case "bash", "zsh", "ksh", "mksh":
			argv = append(argv, "-o", "pipefail")
		}
	}
	return append(argv, "-c", script)
}
