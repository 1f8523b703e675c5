package layout

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUserFrom(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    User
	}{
		{"defaults under HOME", []string{"HOME=/h"}, User{Config: "/h/.config/weave", Data: "/h/.local/share/weave", State: "/h/.local/state/weave"}},
		{"absolute XDG wins", []string{"HOME=/h", "XDG_CONFIG_HOME=/c", "XDG_DATA_HOME=/d", "XDG_STATE_HOME=/s"}, User{Config: "/c/weave", Data: "/d/weave", State: "/s/weave"}},
		{"relative XDG is ignored, for config, data and state alike", []string{"HOME=/h", "XDG_CONFIG_HOME=relative/cfg", "XDG_DATA_HOME=rel/data", "XDG_STATE_HOME=rel/state"},
			User{Config: "/h/.config/weave", Data: "/h/.local/share/weave", State: "/h/.local/state/weave"}},
		{"nothing known", []string{}, User{}},
		{"XDG without HOME", []string{"XDG_DATA_HOME=/d"}, User{Data: "/d/weave"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, UserFrom(tt.environ)); diff != "" {
				t.Errorf("UserFrom(%q) mismatch (-want +got):\n%s", tt.environ, diff)
			}
		})
	}
}

func TestUserPlugins(t *testing.T) {
	u := UserFrom([]string{"HOME=/h", "XDG_DATA_HOME=/d"})
	want := []string{"/d/weave/plugins", "/h/.config/weave/plugins"}
	if diff := cmp.Diff(want, u.Plugins()); diff != "" {
		t.Errorf("Plugins() mismatch (-want +got):\n%s", diff)
	}
}

func TestProject(t *testing.T) {
	p := NewProject("/p")
	got := []string{p.Dir(), p.Plans(), p.Plan("x"), p.Logs(), p.HostLog(), p.PlanLogs("x"), p.Plugins(), p.State(), p.Lock(), p.Run()}
	want := []string{"/p/.weave", "/p/.weave/plans", "/p/.weave/plans/x.md", "/p/.weave/logs", "/p/.weave/logs/weave.log",
		"/p/.weave/logs/x", "/p/.weave/plugins", "/p/.weave/state.json", "/p/.weave/weave.lock", "/p/.weave/run"}
	for i := range want {
		want[i] = filepath.FromSlash(want[i])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("project paths mismatch (-want +got):\n%s", diff)
	}
	if got := p.Rel("/p/.weave/plans/x.md"); got != filepath.FromSlash(".weave/plans/x.md") {
		t.Errorf("Rel(inside) = %q", got)
	}
	if got := p.Rel("/elsewhere/x"); got != "/elsewhere/x" {
		t.Errorf("Rel(outside) = %q, want it unchanged", got)
	}
}
