package plans

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDependsAndTags(t *testing.T) {
	type view struct {
		Title    string
		Category string
		After    []int
		Serial   bool
		Needs    []string
		Budget   string
	}
	tests := []struct {
		name string
		src  string
		want view
	}{
		{"field", "- [ ] 3. C\n  **Depends**: 1, 2\n", view{Title: "C", After: []int{1, 2}}},
		{"depends on", "- [ ] 3. C\n  **Depends on**: #2 and #1\n", view{Title: "C", After: []int{1, 2}}},
		{"after label", "- [ ] 3. C\n  - **After:** task 2\n", view{Title: "C", After: []int{2}}},
		{"tasks and range", "- [ ] 5. C\n  **Depends**: tasks 1-3\n", view{Title: "C", After: []int{1, 2, 3}}},
		{"named in parentheses", "- [ ] 5. C\n  **Depends**: 2 (schema, tables), 4\n", view{Title: "C", After: []int{2, 4}}},
		{"none", "- [ ] 5. C\n  **Depends**: none\n", view{Title: "C"}},
		{"dash", "- [ ] 5. C\n  **Depends**: -\n", view{Title: "C"}},
		{"tag", "- [ ] 3. C [after: 1, 2]\n", view{Title: "C", After: []int{1, 2}}},
		{"tag and field merge", "- [ ] 4. C [After: 3]\n  **Depends**: 1, 3\n", view{Title: "C", After: []int{1, 3}}},
		{"serial", "- [ ] 1. Migrate [serial]\n", view{Title: "Migrate", Serial: true}},
		{"serial in the middle", "- [ ] 1. Migrate [SERIAL] the db\n", view{Title: "Migrate the db", Serial: true}},
		{"serial link stays", "- [ ] 1. See [serial](http://x)\n", view{Title: "See [serial](http://x)"}},
		{"other bare brackets stay", "- [ ] 1. [WIP] Do\n", view{Title: "[WIP] Do"}},
		{"needs", "- [ ] 1. Train [needs: gpu, os=linux]\n", view{Title: "Train", Needs: []string{"gpu", "os=linux"}}},
		{"budget", "- [ ] 1. Train [budget: $2]\n", view{Title: "Train", Budget: "$2"}},
		{"all together", "- [ ] 4. Build it [category: backend] [after: 1] [serial] [needs: gpu] [budget: $0.50]\n  **Depends**: 2\n",
			view{Title: "Build it", Category: "backend", After: []int{1, 2}, Serial: true, Needs: []string{"gpu"}, Budget: "$0.50"}},
		{"code is not a field", "- [ ] 2. C\n  ```sh\n  **Depends**: 1\n  ```\n", view{Title: "C"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse([]byte(tt.src))
			if len(p.Tasks) != 1 {
				t.Fatalf("Parse(%q) has %d tasks, want 1", tt.src, len(p.Tasks))
			}
			tk := p.Tasks[0]
			got := view{tk.Title, tk.Category, tk.After, tk.Serial, tk.Needs, tk.Budget}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestParseDepends(t *testing.T) {
	tests := []struct {
		in   string
		nums []int
		bad  []string
	}{
		{"1, 3", []int{1, 3}, nil},
		{"#1; #3", []int{1, 3}, nil},
		{"1 3", []int{1, 3}, nil},
		{"task 2 and task 4", []int{2, 4}, nil},
		{"2–4", []int{2, 3, 4}, nil},
		{"`1`, **2**", []int{1, 2}, nil},
		{"none", nil, nil},
		{"N/A", nil, nil},
		{"the login task", nil, []string{"the login task"}},
		{"1, setup", []int{1}, []string{"setup"}},
		{"0", nil, []string{"0"}},
		{"4-2", nil, []string{"4-2"}},
		{"1-99999", nil, []string{"1-99999"}},
		{"1234567890", nil, []string{"1234567890"}},
	}
	for _, tt := range tests {
		nums, bad := parseDepends(tt.in)
		if !cmp.Equal(nums, tt.nums) || !cmp.Equal(bad, tt.bad) {
			t.Errorf("parseDepends(%q) = %v, %q, want %v, %q", tt.in, nums, bad, tt.nums, tt.bad)
		}
	}
}

// depsPlan is a plan in the Pattern template whose TODOs are given.
func depsPlan(todos string) string {
	return "# D\n\n## TL;DR\n**Estimated Effort**: Short\n\n## Context\nc\n\n## Objectives\no\n\n## TODOs\n\n" +
		todos + "\n## Verification\n- [ ] tests pass\n"
}

func todo(n int, extra string) string {
	return "- [ ] " + strconv.Itoa(n) + ". T" + strconv.Itoa(n) + "\n  **What**: w\n  **Acceptance**: a\n" + extra
}

func TestValidateDependencies(t *testing.T) {
	tests := []struct {
		name   string
		todos  string
		errors []Problem
	}{
		{name: "in order", todos: todo(1, "") + todo(2, "  **Depends**: 1\n") + todo(3, "  **Depends**: 1, 2\n")},
		{name: "later task named", todos: todo(1, "  **Depends**: 2\n") + todo(2, "")},
		{
			name:   "unknown number",
			todos:  todo(1, "") + todo(2, "  **Depends**: 7\n"),
			errors: []Problem{{17, "task 2 depends on task 7, which is not in the plan"}},
		},
		{
			name:   "itself",
			todos:  todo(1, "") + todo(2, "  **Depends**: 1, 2\n"),
			errors: []Problem{{17, "task 2 depends on itself"}},
		},
		{
			name:   "not a number",
			todos:  todo(1, "") + todo(2, "  **Depends**: the first one\n"),
			errors: []Problem{{17, `task 2: "the first one" is not a task number`}},
		},
		{
			name:   "not a number in the tag",
			todos:  todo(1, "") + "- [ ] 2. T2 [after: setup]\n  **What**: w\n  **Acceptance**: a\n",
			errors: []Problem{{17, `task 2: "setup" is not a task number`}},
		},
		{
			name:   "two-task cycle",
			todos:  todo(1, "") + todo(2, "  **Depends**: 4\n") + todo(3, "") + todo(4, "  **Depends**: 2\n"),
			errors: []Problem{{17, "tasks 2 → 4 → 2 form a cycle"}},
		},
		{
			name:   "three-task cycle through tag and field",
			todos:  todo(1, "  **Depends**: 3\n") + "- [ ] 2. T2 [after: 1]\n  **What**: w\n  **Acceptance**: a\n" + todo(3, "  **Depends**: 2\n"),
			errors: []Problem{{14, "tasks 1 → 3 → 2 → 1 form a cycle"}},
		},
		{
			name: "a long cycle is named by its ends",
			todos: todo(1, "  **Depends**: 10\n") + todo(2, "  **Depends**: 1\n") + todo(3, "  **Depends**: 2\n") + todo(4, "  **Depends**: 3\n") +
				todo(5, "  **Depends**: 4\n") + todo(6, "  **Depends**: 5\n") + todo(7, "  **Depends**: 6\n") + todo(8, "  **Depends**: 7\n") +
				todo(9, "  **Depends**: 8\n") + todo(10, "  **Depends**: 9\n"),
			errors: []Problem{{14, "tasks 1 → 10 → 9 → 8 → 7 → 6 → 5 → … → 2 → 1 form a cycle of 10 tasks"}},
		},
		{
			name:  "ambiguous number",
			todos: todo(1, "") + todo(1, "") + todo(2, "  **Depends**: 1\n"),
			errors: []Problem{
				{17, "task number 1 is used twice"},
				{20, "task 2 depends on task 1, but 2 tasks are numbered 1 (lines 14 and 17)"},
			},
		},
		{
			name:   "unnumbered task",
			todos:  todo(1, "") + "- [ ] Unnumbered\n  **What**: w\n  **Acceptance**: a\n" + todo(3, "  **Depends**: 2\n"),
			errors: []Problem{{20, "task 3 depends on task 2, but no task is numbered 2 (the item on line 17 has no number)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := validateSrc(t, depsPlan(tt.todos))
			checkProblems(t, "errors", rep.Errors, tt.errors)
		})
	}
}

func TestValidateVerificationDependencies(t *testing.T) {
	// A Verification item may wait for tasks; a TODO may not wait for the
	// Verification checklist, which waits for every TODO.
	src := strings.Replace(depsPlan(todo(1, "")+todo(2, "")), "- [ ] tests pass", "- [ ] 3. tests pass [after: 1, 2]", 1)
	if rep := validateSrc(t, src); !rep.OK() {
		t.Errorf("a Verification item with After: errors %v, want none", rep.Errors)
	}
	src = strings.Replace(depsPlan(todo(1, "")+todo(2, "  **Depends**: 3\n")), "- [ ] tests pass", "- [ ] 3. tests pass", 1)
	checkProblems(t, "errors", validateSrc(t, src).Errors, []Problem{{17, "task 2 depends on 3, an item of the Verification checklist"}})
}

func validateSrc(t *testing.T, src string) Report {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(PlansDir(dir), "p.md")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return Validate(dir, p)
}

// checkProblems compares findings by line and message prefix.
func checkProblems(t *testing.T, kind string, got, want []Problem) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", kind, got, want)
	}
	for i := range want {
		if got[i].Line != want[i].Line || !strings.HasPrefix(got[i].Msg, want[i].Msg) {
			t.Errorf("%s[%d] = %v, want %v...", kind, i, got[i], want[i])
		}
	}
}
