package plans

import (
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
