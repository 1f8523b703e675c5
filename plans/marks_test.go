package plans

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const marksPlan = "# P\n\n## TODOs\n\n- [x] 1. One\n- [ ] 2. Two\n- [ ] 3. Three\n"

func TestMarkChanges(t *testing.T) {
	prev := Parse([]byte(marksPlan))
	for _, tc := range []struct {
		name, next string
		want       []int
	}{
		{"text only", strings.Replace(marksPlan, "# P", "# Plan", 1), nil},
		{"a tick", strings.Replace(marksPlan, "[ ] 2.", "[x] 2.", 1), []int{2}},
		{"an untick", strings.Replace(marksPlan, "[x] 1.", "[ ] 1.", 1), []int{1}},
		{"a new task ticked", marksPlan + "- [X] 4. Four\n", []int{4}},
		{"a new task open", marksPlan + "- [ ] 4. Four\n", nil},
		{"a task removed", strings.Replace(marksPlan, "- [ ] 3. Three\n", "", 1), nil},
	} {
		var got []int
		for _, c := range MarkChanges(prev, Parse([]byte(tc.next))) {
			got = append(got, c.Number)
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%s: MarkChanges = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := MarkChanges(nil, Parse([]byte(marksPlan))); len(got) != 1 || got[0].Number != 1 {
		t.Errorf("MarkChanges of a new file = %v, want task 1, the one ticked", got)
	}
}

func TestKeepMarksPutsBackTicksAndKeepsText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	if err := os.WriteFile(path, []byte(marksPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	owner, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if np, kept, err := KeepMarks(owner); err != nil || np != owner || len(kept.Marks) != 0 {
		t.Fatalf("KeepMarks of an unchanged file = %p, %v, %v; want the owner, nothing put back", np, kept, err)
	}
	// A sed ticks task 2, unticks task 1 and renames the plan.
	edited := strings.NewReplacer("[ ] 2.", "[x] 2.", "[x] 1.", "[ ] 1.", "# P", "# Renamed").Replace(marksPlan)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	np, kept, err := KeepMarks(owner)
	back := kept.Marks
	if err != nil || len(back) != 2 {
		t.Fatalf("KeepMarks = %v, %v; want tasks 1 and 2 put back", back, err)
	}
	want := strings.Replace(marksPlan, "# P", "# Renamed", 1)
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Errorf("file after KeepMarks =\n%s\nwant the text edit kept and the marks put back:\n%s", b, want)
	}
	if !np.Tasks[0].Done || np.Tasks[1].Done || np.Title != "Renamed" {
		t.Errorf("KeepMarks plan = %+v, want task 1 done, task 2 open, the new title", np.Tasks)
	}
}
