package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The permissions lists of every layer add up (a user's deny holds in the
// project); the project's defaultMode wins; a block pasted from Claude
// Code's settings loads as it is.
func TestPermissionsLayers(t *testing.T) {
	e := newEnv(t)
	write(t, e.userFile("config.yaml"), "permissions:\n  deny: [\"Bash(rm -rf:*)\"]\n  defaultMode: plan\n")
	write(t, e.projectFile("config.json"), `{"permissions": {"allow": ["Bash(git status:*)", "WebSearch"], "deny": ["Read(.env)"],
  "defaultMode": "acceptEdits", "additionalDirectories": ["../docs"], "disableBypassPermissionsMode": "disable"}}`)
	c, s := mustLoad(t, e.opts())
	want := PermissionsConfig{Allow: []string{"Bash(git status:*)", "WebSearch"}, Deny: []string{"Bash(rm -rf:*)", "Read(.env)"},
		DefaultMode: "acceptEdits", AdditionalDirectories: []string{"../docs"}, DisableBypassPermissionsMode: "disable"}
	if diff := cmp.Diff(want, c.Permissions); diff != "" {
		t.Errorf("Permissions (-want +got):\n%s", diff)
	}
	if layer, _ := s.Of("permissions.deny[0]"); layer != LayerUser {
		t.Errorf("permissions.deny[0] from %v, want the user layer", layer)
	}
}

func TestPermissionsErrors(t *testing.T) {
	tests := []struct {
		yaml, want string
	}{
		{"permissions:\n  deny: [\"Bash(git push\"]\n", "permissions.deny[0]"},
		{"permissions:\n  allow: [\"Teleport\"]\n", `unknown tool "Teleport"`},
		{"permissions:\n  defaultMode: yolo\n", "permissions.defaultMode"},
		{"permissions:\n  allwo: [Bash]\n", "allwo"},
		{"permissions: [Bash]\n", "permissions"},
	}
	for _, tt := range tests {
		e := newEnv(t)
		write(t, e.projectFile("config.yaml"), tt.yaml)
		_, _, err := Load(e.opts())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%q) = %v, want an error naming %q", tt.yaml, err, tt.want)
		}
	}
}
