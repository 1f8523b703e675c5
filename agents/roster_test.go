package agents

import (
	"slices"
	"strings"
	"testing"

	"github.com/weavehq/weave/plugins"
)

func find(t *testing.T, roles []Role, name string) Role {
	t.Helper()
	i := slices.IndexFunc(roles, func(r Role) bool { return r.Name == name })
	if i < 0 {
		t.Fatalf("no role %q in %v", name, names(roles))
	}
	return roles[i]
}

func TestBuildRosterDefaultIsTheEightRoles(t *testing.T) {
	roles, err := BuildRoster(Project{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(roles), RoleNames()) {
		t.Errorf("roster = %v, want %v", names(roles), RoleNames())
	}
	if got, want := find(t, roles, Loom).Prompt, role(t, Loom).Prompt; got != want {
		t.Error("Loom's prompt in the default roster differs from Roles()'s")
	}
}

func TestBuildRosterCategoriesAndCustomAgents(t *testing.T) {
	temp := 0.7
	roles, err := BuildRoster(Project{
		Categories: []Category{{Name: "frontend", Model: "fm", Temperature: &temp, Tools: []string{"write", "read"}, PromptAppend: "Use the design system."}},
		Custom: []Custom{
			{Name: "docs", Description: "docs need writing", Prompt: "You write docs.", Tools: []string{"read", "write"}},
			{Name: "lead", Prompt: "You lead.\nMore.", Mode: ModePrimary, Delegates: []string{"docs"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fe := find(t, roles, "shuttle-frontend")
	if fe.Model != "fm" || fe.Temperature != 0.7 || fe.Category != "frontend" || !slices.Equal(fe.Tools, []string{"read", "write"}) ||
		!strings.Contains(fe.Prompt, "You are Shuttle") || !strings.HasSuffix(fe.Prompt, "Use the design system.\n") {
		t.Errorf("shuttle-frontend = %+v", fe)
	}
	lead := find(t, roles, "lead")
	if lead.Mode != ModePrimary || !slices.Contains(lead.Tools, plugins.ToolTask) || !slices.Equal(lead.Delegates, []string{"docs"}) {
		t.Errorf("lead = %+v, want a primary that may delegate to docs (task added to its default row)", lead)
	}
	if d := find(t, roles, "docs"); !d.Custom || d.Mode != ModeSubagent || d.Temperature != 0.3 {
		t.Errorf("docs = %+v", d)
	}
	loom := find(t, roles, Loom)
	if !slices.Equal(loom.Delegates, []string{Thread, Spindle, Pattern, Weft, Warp, Shuttle, "shuttle-frontend", "docs"}) {
		t.Errorf("loom delegates to %v; want the built-ins, then the subagents the project adds, not the primary lead", loom.Delegates)
	}
	if !strings.Contains(loom.Prompt, "| `docs` | docs need writing |") || strings.Contains(loom.Prompt, "`lead`") {
		t.Errorf("Loom's prompt:\n%s", loom.Prompt)
	}
	if !strings.Contains(find(t, roles, Pattern).Prompt, "This project's categories: `frontend`") {
		t.Error("Pattern is not told the project's categories")
	}
}

func TestBuildRosterDisabled(t *testing.T) {
	roles, err := BuildRoster(Project{Disabled: []string{"weft", "Pattern"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names(roles), Weft) || slices.Contains(names(roles), Pattern) {
		t.Errorf("roster = %v, want weft and pattern gone", names(roles))
	}
	loom := find(t, roles, Loom)
	if slices.Contains(loom.Delegates, Weft) || strings.Contains(loom.Prompt, "Weft") || strings.Contains(loom.Prompt, "Pattern") {
		t.Errorf("Loom still reaches or names a disabled agent: %v\n%s", loom.Delegates, loom.Prompt)
	}
	if !strings.Contains(loom.Prompt, "write a plan in `.weave/plans/<name>.md` yourself") {
		t.Errorf("without Pattern, Loom is not told to plan itself:\n%s", loom.Prompt)
	}
}

func TestBuildRosterErrors(t *testing.T) {
	tests := []struct {
		name string
		p    Project
		want string
	}{
		{"loom", Project{Disabled: []string{"loom"}}, "loom cannot be disabled"},
		{"unknown disabled", Project{Disabled: []string{"nobody"}}, `no agent "nobody"`},
		{"clash", Project{Custom: []Custom{{Name: "thread", Prompt: "x"}}}, "thread is already an agent"},
		{"bad name", Project{Custom: []Custom{{Name: "Big Agent", Prompt: "x"}}}, "lower-case"},
		{"no prompt", Project{Custom: []Custom{{Name: "a"}}}, "no prompt"},
		{"delegates without task", Project{Custom: []Custom{{Name: "a", Prompt: "x", Tools: []string{"read"}, Delegates: []string{"thread"}}}}, "needs task"},
		{"delegate to a primary", Project{Custom: []Custom{{Name: "a", Prompt: "x", Delegates: []string{"tapestry"}}}}, "tapestry is a primary agent"},
		{"delegate to a disabled one", Project{Custom: []Custom{{Name: "a", Prompt: "x", Delegates: []string{"thread"}}}, Disabled: []string{"thread"}}, `no agent "thread"`},
		{"category tool outside shuttle", Project{Categories: []Category{{Name: "x", Tools: []string{"teleport"}}}}, "not in shuttle's row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BuildRoster(tt.p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("BuildRoster = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
