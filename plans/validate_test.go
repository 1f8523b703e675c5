package plans

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodPlan = `# Good

## TL;DR
> **Estimated Effort**: Short

## Context
c

## Objectives
o

## TODOs

- [ ] 1. One
  **What**: w
  **Files**: ` + "`main.go`, `cmd/new.go` (new)" + `
  **Acceptance**: a

- [ ] 2. Two
  **What**: w
  **Acceptance**: a

## Verification
- [ ] tests pass
`

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		errors   []Problem
		warnings []Problem
	}{
		{name: "good plan", src: goodPlan},
		{name: "small, medium, large are efforts too", src: strings.Replace(goodPlan, "Short", "Small", 1)},
		{
			name:   "empty file",
			src:    "",
			errors: []Problem{{0, "no task in the plan"}},
			warnings: []Problem{
				{0, "no ## TL;DR section"}, {0, "no ## Context section"}, {0, "no ## Objectives section"},
				{0, "no ## TODOs section"}, {0, "no ## Verification section"}, {0, "no **Estimated Effort**"},
			},
		},
		{
			name:     "TODOs without tasks",
			src:      strings.Replace(goodPlan, "- [ ] 1. One", "- 1. One", 1)[:strings.Index(goodPlan, "- [ ] 2.")-1] + "\n## Verification\n",
			errors:   []Problem{{0, "no task in the ## TODOs section"}},
			warnings: nil,
		},
		{
			name:   "duplicate numbers",
			src:    "## TL;DR\n**Estimated Effort**: XL\n## Context\n## Objectives\n## Verification\n- [ ] 1. a\n- [ ] 2. b\n- [ ] 1. c\n",
			errors: []Problem{{8, "task number 1 is used twice (lines 6 and 8)"}},
			warnings: []Problem{
				{0, "no ## TODOs section"},
			},
		},
		{
			name: "numbering gaps and start",
			src:  "## TL;DR\n**Estimated Effort**: quick\n## Context\n## Objectives\n## Verification\n- [ ] 2. a\n- [ ] 3. b\n- [ ] 6. c\n",
			warnings: []Problem{
				{6, "task numbers start at 2"},
				{8, "task numbers jump from 3 to 6"},
				{0, "no ## TODOs section"},
			},
		},
		{
			name: "TODO task without fields and bad files",
			src: "# P\n## TL;DR\n**Estimated Effort**: Huge\n## Context\n## Objectives\n## TODOs\n" +
				"- [ ] 1. a\n  **Files**: /etc/passwd, ../outside.go, `missing.go`, `pkg/*.go`, `made.go` (new), `main.go`\n" +
				"- [ ] 2. b\n  **What**: w\n## Verification\n",
			warnings: []Problem{
				{7, "task 1: file /etc/passwd is absolute"},
				{7, "task 1: file ../outside.go is outside the project"},
				{7, "task 1: file missing.go does not exist"},
				{7, "task 1 has no **What** and **Acceptance**"},
				{9, "task 2 has no **Acceptance**"},
				{3, "unknown **Estimated Effort** \"Huge\""},
			},
		},
		{
			name: "tasks missing the same fields make one warning",
			src: "# P\n## TL;DR\n**Estimated Effort**: Short\n## Context\n## Objectives\n## TODOs\n" +
				"- [ ] 1. a\n- [ ] 2. b\n- [ ] 3. c\n- [ ] 4. d\n  **What**: w\n- [ ] 5. e\n- [ ] 6. f\n  **What**: w\n## Verification\n",
			warnings: []Problem{
				{7, "tasks 1-3 and 5 have no **What** and **Acceptance**; add the fields so each task says"},
				{10, "tasks 4 and 6 have no **Acceptance**"},
			},
		},
		{
			name: "runbook plan: no field warnings without a TODOs section",
			src:  "# R\n## TL;DR\n**Estimated Effort**: Medium (an hour)\n## Context\n## Objectives\n## Verification\n- [ ] make it\n  ```sh\n  true\n  ```\n",
			warnings: []Problem{
				{0, "no ## TODOs section"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project := newProject(t, map[string]string{"p.md": tt.src}, "p.md")
			if err := os.WriteFile(filepath.Join(project, "main.go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := Load(filepath.Join(PlansDir(project), "p.md"))
			if err != nil {
				t.Fatal(err)
			}
			r := Validate(project, p)
			assertProblems(t, "errors", tt.errors, r.Errors)
			assertProblems(t, "warnings", tt.warnings, r.Warnings)
			if r.OK() != (len(tt.errors) == 0) {
				t.Errorf("OK() = %v with errors %v", r.OK(), r.Errors)
			}
		})
	}
}

// assertProblems compares problems by line and message prefix, so that the
// advice after the finding can be worded freely.
func assertProblems(t *testing.T, kind string, want, got []Problem) {
	t.Helper()
	ok := len(want) == len(got)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i].Line == want[i].Line && strings.HasPrefix(got[i].Msg, want[i].Msg)
	}
	if !ok {
		t.Errorf("%s = %q, want (by prefix) %q", kind, got, want)
	}
}

func TestValidateFile(t *testing.T) {
	project := newProject(t, map[string]string{"p.md": goodPlan}, "p.md")
	outside := writeTemp(t, "elsewhere.md", []byte(goodPlan))
	link := filepath.Join(PlansDir(project), "link.md")
	if err := os.Symlink(outside, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	tests := []struct {
		name   string
		path   string
		errHas string
	}{
		{"inside", filepath.Join(PlansDir(project), "p.md"), ""},
		{"outside", outside, "outside"},
		{"missing", filepath.Join(PlansDir(project), "gone.md"), "does not exist"},
		{"link leading outside", link, "outside .weave/plans"},
		{"no path", "", "no file path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse([]byte(goodPlan))
			p.Path = tt.path
			r := Validate(project, p)
			if tt.errHas == "" {
				if !r.OK() {
					t.Errorf("Validate(%s) errors = %v, want none", tt.path, r.Errors)
				}
				return
			}
			if len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Msg, tt.errHas) {
				t.Errorf("Validate(%s) errors = %v, want one containing %q", tt.path, r.Errors, tt.errHas)
			}
		})
	}
}

func TestTaskNames(t *testing.T) {
	titled := func(titles ...string) []Task {
		var ts []Task
		for _, s := range titles {
			ts = append(ts, Task{Title: s})
		}
		return ts
	}
	numbered := func(ns ...int) []Task {
		var ts []Task
		for _, n := range ns {
			ts = append(ts, Task{Number: n, Title: "t"})
		}
		return ts
	}
	for _, tt := range []struct {
		ts   []Task
		want string
	}{
		{numbered(1, 2, 3, 4), "tasks 1-4"},
		{numbered(1, 3, 4, 9), "tasks 1, 3-4 and 9"},
		{titled("a", "b"), `tasks "a" and "b"`},
		{titled("a", "b", "c", "d", "e"), `tasks "a", "b", "c" and 2 more`},
		{append(numbered(1), titled("b")...), `tasks "t" and "b"`},
	} {
		if got := taskNames(tt.ts); got != tt.want {
			t.Errorf("taskNames = %q, want %q", got, tt.want)
		}
	}
}
