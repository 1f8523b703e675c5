package plans

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const keepPlan = "# P\n\n## TODOs\n\n" +
	"- [x] 1. One\n" +
	"- [ ] 2. Two\n  ```sh verify\n  test -f two\n  ```\n" +
	"- [ ] 3. Three\n" +
	"\n## Verification\n\n- [ ] Gate\n"

func TestMissingTasks(t *testing.T) {
	owner := Parse([]byte(keepPlan))
	for _, tc := range []struct {
		name, next string
		want       []string
	}{
		{"unchanged", keepPlan, nil},
		{"text edited, a task added", strings.Replace(keepPlan, "# P", "# Q", 1) + "- [ ] 4. Four\n", nil},
		{"a task deleted", strings.Replace(keepPlan, "- [ ] 3. Three\n", "", 1), []string{"Three"}},
		{"a task made plain text", strings.Replace(keepPlan, "- [ ] 2. Two", "2. Two", 1), []string{"Two"}},
		{"a task renamed", strings.Replace(keepPlan, "3. Three", "3. Tree", 1), nil},
		{"a task renamed and renumbered", strings.Replace(keepPlan, "3. Three", "4. Tree", 1), []string{"Three"}},
		{"the gate renamed", strings.Replace(keepPlan, "- [ ] Gate", "- [ ] The gate", 1), nil},
	} {
		var got []string
		for _, m := range MissingTasks(owner, Parse([]byte(tc.next))) {
			got = append(got, m.Title)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: MissingTasks = %v, want %v", tc.name, got, tc.want)
		}
	}
	alike := Parse([]byte("- [ ] 1. A\n- [ ] 1. A\n"))
	if got := MissingTasks(alike, Parse([]byte("- [ ] 1. A\n"))); len(got) != 1 {
		t.Errorf("MissingTasks with one of two alike tasks deleted = %v, want one", got)
	}
}

func TestKeepMarksPutsBackRemovedTasks(t *testing.T) {
	for _, tc := range []struct {
		name, edited string
		restored     int
		lost         int
		want         string // the file after, "" for keepPlan
	}{
		{"a middle task deleted", strings.Replace(keepPlan, "- [ ] 2. Two\n  ```sh verify\n  test -f two\n  ```\n", "", 1), 1, 0, ""},
		{"the last todo deleted", strings.Replace(keepPlan, "- [ ] 3. Three\n", "", 1), 1, 0, ""},
		{"the first task deleted", strings.Replace(keepPlan, "- [x] 1. One\n", "", 1), 1, 0, ""},
		{"a task deleted, another ticked", strings.Replace(strings.Replace(keepPlan, "- [ ] 3. Three\n", "", 1), "[ ] 2.", "[x] 2.", 1), 1, 0, ""},
		{"the Verification item deleted", strings.Replace(keepPlan, "- [ ] Gate\n", "", 1), 1, 0, ""},
		{"every task deleted", "# P\n\nNothing left.\n", 0, 4, "# P\n\nNothing left.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.md")
			if err := os.WriteFile(path, []byte(keepPlan), 0o644); err != nil {
				t.Fatal(err)
			}
			owner, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.edited), 0o644); err != nil {
				t.Fatal(err)
			}
			np, kept, err := KeepMarks(owner)
			if err != nil {
				t.Fatal(err)
			}
			if len(kept.Restored) != tc.restored || len(kept.Lost) != tc.lost {
				t.Errorf("KeepMarks restored %v, lost %v; want %d and %d", kept.Restored, kept.Lost, tc.restored, tc.lost)
			}
			want := tc.want
			if want == "" {
				want = keepPlan
			}
			if b, _ := os.ReadFile(path); string(b) != want {
				t.Errorf("file after KeepMarks =\n%s\nwant\n%s", b, want)
			}
			if string(np.Src) != want {
				t.Errorf("KeepMarks plan =\n%s\nwant the file", np.Src)
			}
		})
	}
}
