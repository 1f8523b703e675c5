package proc

import (
	"slices"
	"testing"
)

func TestShellArgv(t *testing.T) {
	tests := []struct {
		shell   string
		errexit bool
		want    []string
	}{
		{"bash", true, []string{"bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", "x"}},
		{"bash", false, []string{"bash", "--noprofile", "--norc", "-c", "x"}},
		{"sh", true, []string{"sh", "-e", "-c", "x"}},
		{"/bin/zsh", true, []string{"/bin/zsh", "-f", "-e", "-o", "pipefail", "-c", "x"}},
		{"dash", false, []string{"dash", "-c", "x"}},
	}
	for _, tt := range tests {
		if got := ShellArgv(tt.shell, tt.errexit, "x"); !slices.Equal(got, tt.want) {
			t.Errorf("ShellArgv(%q, %v) = %q, want %q", tt.shell, tt.errexit, got, tt.want)
		}
	}
}
