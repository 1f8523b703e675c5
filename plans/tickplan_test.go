package plans

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSetDoneInDerivesThePlanAParseWouldGive(t *testing.T) {
	src := "# P\r\n\r\n## TODOs\r\n\r\n- [ ] 1. Ünï  \r\n- [ ] 2. Two\r\n  - [ ] sub\r\n* [X] 3. Three\r\n"
	path := filepath.Join(t.TempDir(), "p.md")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		idx  int
		done bool
	}{{1, true}, {0, true}, {1, false}, {2, false}} {
		got, err := SetDoneIn(p, p.Tasks[tc.idx], tc.done)
		if err != nil {
			t.Fatalf("SetDoneIn(task %d, %v) error = %v", tc.idx, tc.done, err)
		}
		want, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(Plan{}, fileKey{})); diff != "" {
			t.Fatalf("SetDoneIn(task %d, %v) plan differs from a fresh parse (-want +got):\n%s", tc.idx, tc.done, diff)
		}
		if got.Tasks[tc.idx].Done != tc.done {
			t.Errorf("task %d Done = %v, want %v", tc.idx, got.Tasks[tc.idx].Done, tc.done)
		}
		p = got
	}
}

func TestSetDoneInFallsBackWhenTheFileChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	if err := os.WriteFile(path, []byte("- [ ] 1. One\n- [ ] 2. Two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// An editor inserts a task above: the old offsets are stale.
	if err := os.WriteFile(path, []byte("- [ ] 0. Zero\n- [ ] 1. One\n- [ ] 2. Two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := SetDoneIn(p, p.Tasks[1], true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "- [ ] 0. Zero\n- [ ] 1. One\n- [x] 2. Two\n" {
		t.Errorf("file = %q, want task 2 ticked where it now is", b)
	}
	if len(got.Tasks) != 3 || !got.Tasks[2].Done {
		t.Errorf("returned plan = %+v, want the re-read plan", got.Tasks)
	}
}

func TestReloadDerivesMarkChangesAndParsesOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	src := "# P\n\n- [ ] 1. One\n- [x] 2. Two\n  - [ ] sub\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range []string{
		"# P\n\n- [x] 1. One\n- [ ] 2. Two\n  - [ ] sub\n", // marks only: derived
		"# P\n\n- [x] 1. One\n- [ ] 2. Two\n  - [x] sub\n", // a nested box: not a task mark, parsed
		"# P\n\n- [x] 1. Uno\n- [ ] 2. Two\n  - [x] sub\n", // a title: parsed
		"# P\n\n- [x] 1. Uno\n",                            // shorter: parsed
	} {
		if err := os.WriteFile(path, []byte(edit), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Reload(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(Plan{}, fileKey{})); diff != "" {
			t.Fatalf("Reload after %q differs from a fresh parse (-want +got):\n%s", edit, diff)
		}
		p = got
	}
}

// A stat vouches for an unchanged file, so Reload hands back the plan it was
// given; a change that keeps the size and the modification time is still
// seen.
func TestReloadTrustsAStatOnlyForTheSameFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	if err := os.WriteFile(path, []byte("- [ ] 1. One\n- [ ] 2. Two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Reload(p); err != nil || got != p {
		t.Fatalf("Reload(unchanged) = %p, %v; want the same plan %p", got, err, p)
	}
	// Another writer ticks task 1 in place and sets the time back.
	if err := os.WriteFile(path, []byte("- [x] 1. One\n- [ ] 2. Two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, p.ModTime, p.ModTime); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" {
		got, err := Reload(p)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Tasks[0].Done {
			t.Errorf("Reload after an in-place edit that kept size and time: task 1 Done = false, want the edit seen")
		}
		// A tick from the stale plan keeps the other writer's tick.
		np, err := SetDoneIn(p, p.Tasks[1], true)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if string(b) != "- [x] 1. One\n- [x] 2. Two\n" || !np.Tasks[0].Done || !np.Tasks[1].Done {
			t.Errorf("SetDoneIn from a stale plan: file %q, tasks %+v; want both ticked", b, np.Tasks)
		}
	}
}

func TestSetDoneInPatchesTheFileWhereItStands(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("off unix a tick writes a new file")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.md")
	src := "# P\n\n## TODOs\n\n- [ ] 1. One\n- [ ] 2. Two\n"
	if err := os.WriteFile(path, []byte(src), 0o640); err != nil {
		t.Fatal(err)
	}
	// A second name for the file: a rename would leave it behind.
	link := filepath.Join(dir, "hard.md")
	if err := os.Link(path, link); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SetDoneIn(p, p.Tasks[1], true)
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || after.Mode().Perm() != 0o640 {
		t.Errorf("after the tick the plan is another file (%v) or mode %v; want the same inode, mode 0640", !os.SameFile(before, after), after.Mode().Perm())
	}
	want := "# P\n\n## TODOs\n\n- [ ] 1. One\n- [x] 2. Two\n"
	for _, f := range []string{path, link} {
		if b, _ := os.ReadFile(f); string(b) != want {
			t.Errorf("%s = %q, want %q", filepath.Base(f), b, want)
		}
	}
	if got != p || string(p.Src) != want || !p.Tasks[1].Done {
		t.Errorf("SetDoneIn returned another plan or left p stale: src %q, task 2 done %v", p.Src, p.Tasks[1].Done)
	}
	// The stat of the file written vouches for it: a reload reads nothing.
	if np, err := Reload(p); err != nil || np != p {
		t.Errorf("Reload after the tick = %p, %v; want p itself", np, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("directory holds %d entries after the tick, want the plan and its link only", len(entries))
	}
}

func TestPatchMarksRefusesAFileThatIsNotTheOneRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("off unix a tick writes a new file")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.md")
	src := "- [ ] 1. One\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		around string
		size   int
	}{
		{"mark not as read", "[x]", len(src)},
		{"size not as read", "[ ]", len(src) + 1},
	} {
		if _, err := patchMarks(path, []int{3}, [][]byte{[]byte(tc.around)}, 'x', tc.size, fileKey{}); !errors.Is(err, errStale) {
			t.Errorf("%s: patchMarks error = %v, want errStale", tc.name, err)
		}
	}
	if _, err := patchMarks(filepath.Join(dir, "gone.md"), []int{3}, [][]byte{[]byte("[ ]")}, 'x', len(src), fileKey{}); !errors.Is(err, errStale) {
		t.Errorf("missing file: patchMarks error = %v, want errStale", err)
	}
	other := filepath.Join(dir, "link.md")
	if err := os.Symlink(path, other); err != nil {
		t.Fatal(err)
	}
	if _, err := patchMarks(other, []int{3}, [][]byte{[]byte("[ ]")}, 'x', len(src), fileKey{}); err == nil {
		t.Error("patchMarks wrote through a symbolic link")
	}
	if b, _ := os.ReadFile(path); string(b) != src {
		t.Errorf("file = %q after refused patches, want it untouched", b)
	}
	// One mark of several not as read: none is written.
	two := "- [ ] 1. One\n- [ ] 2. Two\n"
	if err := os.WriteFile(path, []byte(two), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := patchMarks(path, []int{3, 16}, [][]byte{[]byte("[ ]"), []byte("[x]")}, 'x', len(two), fileKey{}); !errors.Is(err, errStale) {
		t.Errorf("second mark not as read: patchMarks error = %v, want errStale", err)
	}
	if b, _ := os.ReadFile(path); string(b) != two {
		t.Errorf("file = %q after a refused patch of two marks, want it untouched", b)
	}
}

func TestRefreshUpdatesAnOwnedPlanInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	src := "# P\n\n## TODOs\n\n- [ ] 1. One\n- [x] 2. Two\n- [ ] 3. Three\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Another writer ticks 1 and 3 and unticks 2, as a rename would.
	ticked := "# P\n\n## TODOs\n\n- [x] 1. One\n- [ ] 2. Two\n- [X] 3. Three\n"
	if err := os.WriteFile(path+".new", []byte(ticked), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	got, err := Refresh(p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != p {
		t.Error("Refresh of a plan whose marks changed returned another plan, want p brought up to date")
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Plan{}, fileKey{})); diff != "" {
		t.Errorf("Refresh differs from a fresh parse (-want +got):\n%s", diff)
	}
	// Any other change is parsed in full.
	edited := "# P\n\n## TODOs\n\n- [x] 1. One, renamed\n- [ ] 2. Two\n- [X] 3. Three\n"
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = Refresh(p)
	if err != nil {
		t.Fatal(err)
	}
	if got == p || got.Tasks[0].Title != "One, renamed" {
		t.Errorf("Refresh after an edit = %+v, want a new parse", got.Tasks[0])
	}
}

// Several tasks are ticked with one write where the file stands, and the
// plan is what a parse of the file gives; when the file moved under the
// plan, each task is found again and all are ticked in one new file.
func TestSetAllDoneInTicksSeveralAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	if err := os.WriteFile(path, []byte("- [ ] 1. One\n- [X] 2. Two\n- [ ] 3. Three\n- [ ] 4. Four\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	got, err := SetAllDoneIn(p, []Task{p.Tasks[0], p.Tasks[1], p.Tasks[3]}, true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "- [x] 1. One\n- [X] 2. Two\n- [ ] 3. Three\n- [x] 4. Four\n" {
		t.Errorf("file = %q, want tasks 1 and 4 ticked, 2 left as it was", b)
	}
	if after, _ := os.Stat(path); runtime.GOOS != "windows" && !os.SameFile(before, after) {
		t.Error("the plan was replaced, want it patched where it stands")
	}
	want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Plan{}, fileKey{})); diff != "" {
		t.Fatalf("plan differs from a fresh parse (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(path, []byte("- [ ] 0. Zero\n- [ ] 1. One\n- [X] 2. Two\n- [ ] 3. Three\n- [x] 4. Four\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = SetAllDoneIn(want, []Task{want.Tasks[0], want.Tasks[2], want.Tasks[3]}, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if string(b) != "- [ ] 0. Zero\n- [ ] 1. One\n- [X] 2. Two\n- [ ] 3. Three\n- [ ] 4. Four\n" {
		t.Errorf("file = %q, want tasks 1 and 4 unticked where they now are", b)
	}
	if len(got.Tasks) != 5 || got.Tasks[4].Done || !got.Tasks[2].Done {
		t.Errorf("returned plan = %+v, want the re-read plan", got.Tasks)
	}
}
