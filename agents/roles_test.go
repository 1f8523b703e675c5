package agents

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRolesModesAndDelegation(t *testing.T) {
	tests := []struct {
		name      string
		mode      Mode
		delegates []string
	}{
		{Loom, ModePrimary, []string{Thread, Spindle, Pattern, Weft, Warp, Shuttle}},
		{Tapestry, ModePrimary, nil},
		{Pattern, ModeSubagent, nil},
		{Thread, ModeSubagent, nil},
		{Spindle, ModeSubagent, nil},
		{Weft, ModeSubagent, nil},
		{Warp, ModeSubagent, nil},
		{Shuttle, ModeSubagent, nil},
	}
	var names []string
	for _, r := range Roles() {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff(RoleNames(), names); diff != "" {
		t.Errorf("Roles() names differ from RoleNames() (-want +got):\n%s", diff)
	}
	if len(tests) != len(Roles()) {
		t.Fatalf("len(Roles()) = %d, want %d", len(Roles()), len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := RoleByName(strings.ToUpper(tc.name))
			if !ok {
				t.Fatalf("RoleByName(%q) not found", strings.ToUpper(tc.name))
			}
			if r.Mode != tc.mode {
				t.Errorf("RoleByName(%q).Mode = %s, want %s", tc.name, r.Mode, tc.mode)
			}
			if diff := cmp.Diff(tc.delegates, r.Delegates); diff != "" {
				t.Errorf("RoleByName(%q).Delegates (-want +got):\n%s", tc.name, diff)
			}
			if r.Title == "" {
				t.Errorf("RoleByName(%q).Title is empty", tc.name)
			}
			if r.Temperature < 0 || r.Temperature > 1 {
				t.Errorf("RoleByName(%q).Temperature = %v, want within [0,1]", tc.name, r.Temperature)
			}
			for _, tool := range r.Tools {
				if !slices.Contains(ToolNames(), tool) {
					t.Errorf("RoleByName(%q).Tools has unknown tool %q", tc.name, tool)
				}
			}
		})
	}
	if _, ok := RoleByName("weaver"); ok {
		t.Errorf("RoleByName(%q) found a role, want none", "weaver")
	}
}

func TestPlannerAndReviewersRunCold(t *testing.T) {
	loom, _ := RoleByName(Loom)
	for _, name := range []string{Pattern, Weft, Warp, Thread} {
		r, _ := RoleByName(name)
		if r.Temperature > loom.Temperature || r.Temperature > 0.2 {
			t.Errorf("RoleByName(%q).Temperature = %v, want at most 0.2 and not above loom's %v", name, r.Temperature, loom.Temperature)
		}
	}
}

func TestOnlyPatternHasAWriteScope(t *testing.T) {
	for _, r := range Roles() {
		want := Scope{}
		if r.Name == Pattern {
			want = Scope{Dir: ".weave", Ext: ".md"}
		}
		if r.WriteScope != want {
			t.Errorf("RoleByName(%q).WriteScope = %+v, want %+v", r.Name, r.WriteScope, want)
		}
	}
	if got := (Scope{Dir: ".weave", Ext: ".md"}).String(); got != ".weave/**/*.md" {
		t.Errorf("Scope.String() = %q, want %q", got, ".weave/**/*.md")
	}
}

func TestRolesReturnsCopies(t *testing.T) {
	a := Roles()
	a[0].Tools[0] = "nope"
	a[0].Delegates[0] = "nope"
	b := Roles()
	if b[0].Tools[0] == "nope" || b[0].Delegates[0] == "nope" {
		t.Errorf("changing a Roles() result changed the next one: %v %v", b[0].Tools, b[0].Delegates)
	}
}

// TestPrompts checks each prompt is real, fits the budget, and says what the
// role's rules are, in the project's terms.
func TestPrompts(t *testing.T) {
	tests := []struct {
		role string
		has  []string
	}{
		{Loom, []string{"task", "thread", "spindle", "pattern", "weft", "warp", "shuttle", "weave start-work", "denied"}},
		{Tapestry, []string{"plan_check", "never delegate", ".weave/plans", "Verify", "state.json"}},
		{Pattern, []string{".weave/plans/", "TL;DR", "## Context", "## Objectives", "## TODOs", "**What**", "**Files**", "**Acceptance**", "## Verification", "**Estimated Effort**", "[category:", "`.md`", "**Depends**", "[serial]"}},
		{Thread, []string{"read-only", "never change files", "glob", "grep"}},
		{Spindle, []string{"read-only", "webfetch", "never change files"}},
		{Weft, []string{"[APPROVE]", "[REJECT]", "numbered", "read-only"}},
		{Warp, []string{"[APPROVE]", "[REJECT]", "security", "read-only", "secret"}},
		{Shuttle, []string{"category", "plan_check", "todowrite"}},
	}
	for _, tc := range tests {
		t.Run(tc.role, func(t *testing.T) {
			r, _ := RoleByName(tc.role)
			lines := strings.Count(r.Prompt, "\n")
			if lines < 25 || lines > 90 {
				t.Errorf("prompt of %s has %d lines, want 25 to 90", tc.role, lines)
			}
			for _, s := range tc.has {
				if !strings.Contains(r.Prompt, s) {
					t.Errorf("prompt of %s does not mention %q", tc.role, s)
				}
			}
			// The read-only roles must not be told they can write.
			if !r.Can("write") && strings.Contains(r.Prompt, "`write` and `edit` to") {
				t.Errorf("prompt of read-only %s offers write", tc.role)
			}
		})
	}
}
