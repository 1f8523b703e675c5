package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPluginOptional(t *testing.T) {
	e := newEnv(t)
	write(t, e.projectFile("config.yaml"), `plugins:
  - name: guard
    path: /opt/guard
  - name: stats
    optional: true
  - name: lint
    path: /opt/lint
    optional: true
`)
	c, _ := mustLoad(t, e.opts())
	want := []PluginConfig{{Name: "guard", Path: "/opt/guard"}, {Name: "stats", Optional: true}, {Name: "lint", Path: "/opt/lint", Optional: true}}
	if diff := cmp.Diff(want, c.Plugins); diff != "" {
		t.Errorf("Plugins mismatch (-want +got):\n%s", diff)
	}
}

func TestPluginWithoutPathMustBeOptional(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"plugins:\n  - name: stats\n", "set optional: true"},
		{"plugins:\n  - name: stats\n    optional: \"yes\"\n", "want true or false"},
	} {
		e := newEnv(t)
		write(t, e.projectFile("config.yaml"), tc.yaml)
		_, _, err := Load(e.opts())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q) = %v, want an error saying %q", tc.yaml, err, tc.want)
		}
	}
}

func TestRunbookShellIsOneProgram(t *testing.T) {
	e := newEnv(t)
	write(t, e.projectFile("config.yaml"), "runbook:\n  shell: bash -x\n")
	if _, _, err := Load(e.opts()); err == nil || !strings.Contains(err.Error(), "not one shell") {
		t.Errorf("Load(runbook.shell: bash -x) = %v, want an error saying it is not one shell", err)
	}
	e = newEnv(t)
	opts := e.opts()
	opts.Environ = []string{"WEAVE_RUNBOOK_SHELL=zsh"}
	c, _ := mustLoad(t, opts)
	if c.Runbook.Shell != "zsh" {
		t.Errorf("WEAVE_RUNBOOK_SHELL=zsh gives runbook.shell %q, want zsh", c.Runbook.Shell)
	}
}
