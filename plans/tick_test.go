package plans

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTemp(t testing.TB, name string, src []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSetDoneOnlyMarkChanges ticks and unticks every task of each testdata
// plan and checks that exactly the mark byte changes.
func TestSetDoneOnlyMarkChanges(t *testing.T) {
	for _, file := range []string{"crlf.md", "bom.md", "pattern.md", "runbook.md", "nested.md", "edge.md"} {
		t.Run(file, func(t *testing.T) {
			orig := readTestdata(t, file)
			path := writeTemp(t, file, orig)
			p := Parse(orig)
			for _, tk := range p.Tasks {
				before := readFile(t, path)
				got, err := SetDone(path, tk, !tk.Done)
				if err != nil {
					t.Fatalf("SetDone(task %d, %v) = %v", tk.Index, !tk.Done, err)
				}
				after := readFile(t, path)
				want := bytes.Clone(before)
				if tk.Done {
					want[tk.Mark] = ' '
				} else {
					want[tk.Mark] = 'x'
				}
				if !bytes.Equal(after, want) {
					t.Fatalf("SetDone(task %d): file differs beyond the mark at %d", tk.Index, tk.Mark)
				}
				if !bytes.Equal(got.Src, after) || got.Tasks[tk.Index].Done == tk.Done {
					t.Fatalf("SetDone(task %d) returned a plan that does not match the file", tk.Index)
				}
				if got.Path == "" || got.Name != strings.TrimSuffix(file, ".md") {
					t.Errorf("SetDone returned Path %q Name %q", got.Path, got.Name)
				}
				if _, err := SetDone(path, tk, tk.Done); err != nil {
					t.Fatalf("SetDone(task %d, %v) back = %v", tk.Index, tk.Done, err)
				}
				back := readFile(t, path)
				if tk.Done && orig[tk.Mark] == 'X' {
					back[tk.Mark] = 'X' // re-ticking writes a lower-case x
				}
				if !bytes.Equal(back, before) {
					t.Fatalf("tick then untick of task %d did not give back the original bytes", tk.Index)
				}
			}
			want := bytes.Clone(orig)
			for _, tk := range p.Tasks {
				if want[tk.Mark] == 'X' {
					want[tk.Mark] = 'x'
				}
			}
			if final := readFile(t, path); !bytes.Equal(final, want) {
				t.Errorf("file changed after ticking and unticking every task")
			}
		})
	}
}

func TestSetDoneAlreadyInState(t *testing.T) {
	src := []byte("- [X] upper\n- [ ] open\n")
	path := writeTemp(t, "p.md", src)
	p := Parse(src)
	for _, c := range []struct {
		task Task
		done bool
	}{{p.Tasks[0], true}, {p.Tasks[1], false}} {
		got, err := SetDone(path, c.task, c.done)
		if err != nil {
			t.Fatalf("SetDone(%q, %v) = %v", c.task.Title, c.done, err)
		}
		if !bytes.Equal(readFile(t, path), src) {
			t.Errorf("SetDone(%q, %v) changed the file, want it untouched", c.task.Title, c.done)
		}
		if got.Tasks[c.task.Index].Done != c.done {
			t.Errorf("returned plan has Done = %v, want %v", got.Tasks[c.task.Index].Done, c.done)
		}
	}
}

func TestSetDoneAfterEdit(t *testing.T) {
	orig := "# Plan\r\n\r\n- [ ] 1. First ünï  \r\n- [ ] 2. Second\r\n- [ ] Run tests\r\n- [ ] Run tests\r\n"
	tests := []struct {
		name   string
		edited string
		task   int    // index in the original parse
		want   string // file after the tick; "" when the task is gone
	}{
		{
			name:   "task moved down",
			edited: "# Plan\r\n\r\nA new paragraph.\r\n\r\n- [ ] 2. Second\r\n- [ ] 1. First ünï  \r\n- [ ] Run tests\r\n- [ ] Run tests\r\n",
			task:   0,
			want:   "# Plan\r\n\r\nA new paragraph.\r\n\r\n- [ ] 2. Second\r\n- [x] 1. First ünï  \r\n- [ ] Run tests\r\n- [ ] Run tests\r\n",
		},
		{
			name:   "another task now at the old offset",
			edited: "# Plan\r\n\r\n- [ ] 2. Second\r\n- [ ] 1. First ünï  \r\n- [ ] Run tests\r\n- [ ] Run tests\r\n",
			task:   0,
			want:   "# Plan\r\n\r\n- [ ] 2. Second\r\n- [x] 1. First ünï  \r\n- [ ] Run tests\r\n- [ ] Run tests\r\n",
		},
		{
			name:   "duplicate titles: the undone one nearest the old position",
			edited: "# Plan\r\n\r\n- [ ] 1. First ünï  \r\n- [ ] 2. Second\r\n- [x] Run tests\r\n- [ ] Run tests\r\n- [ ] 3. Added\r\n",
			task:   3,
			want:   "# Plan\r\n\r\n- [ ] 1. First ünï  \r\n- [ ] 2. Second\r\n- [x] Run tests\r\n- [x] Run tests\r\n- [ ] 3. Added\r\n",
		},
		{
			name:   "task removed",
			edited: "# Plan\r\n\r\n- [ ] 2. Second\r\n- [ ] Run tests\r\n- [ ] Run tests\r\n",
			task:   0,
		},
		{
			name:   "task renamed",
			edited: "# Plan\r\n\r\n- [ ] 1. First, renamed\r\n- [ ] 2. Second\r\n",
			task:   0,
		},
		{
			name:   "task renumbered",
			edited: "# Plan\r\n\r\n- [ ] 4. First ünï\r\n- [ ] 2. Second\r\n",
			task:   0,
		},
		{
			name:   "file emptied",
			edited: "",
			task:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := Parse([]byte(orig)).Tasks[tt.task]
			path := writeTemp(t, "p.md", []byte(tt.edited))
			got, err := SetDone(path, tk, true)
			after := string(readFile(t, path))
			if tt.want == "" {
				var gone *TaskGoneError
				if !errors.As(err, &gone) {
					t.Fatalf("SetDone = %v, want a *TaskGoneError", err)
				}
				if gone.Path != path || gone.Title != tk.Title || !strings.Contains(err.Error(), tk.Title) {
					t.Errorf("TaskGoneError = %+v (%q), want path %s and title %q", gone, err, path, tk.Title)
				}
				if after != tt.edited {
					t.Errorf("file changed to %q, want it untouched", after)
				}
				return
			}
			if err != nil {
				t.Fatalf("SetDone = %v, want nil", err)
			}
			if after != tt.want {
				t.Errorf("file after SetDone = %q, want %q", after, tt.want)
			}
			if string(got.Src) != tt.want {
				t.Errorf("returned plan Src = %q, want the file", got.Src)
			}
		})
	}
}

func TestSetDoneErrors(t *testing.T) {
	tk := Parse([]byte("- [ ] a\n")).Tasks[0]
	if _, err := SetDone(filepath.Join(t.TempDir(), "missing.md"), tk, true); err == nil || !strings.Contains(err.Error(), "missing.md") {
		t.Errorf("SetDone(missing file) = %v, want an error naming the file", err)
	}
	// A task whose tick would turn it into a link reference definition is
	// not a task in the first place; a Task pointing there is refused.
	src := []byte("- [ ]: url\n")
	path := writeTemp(t, "p.md", src)
	fake := Task{Mark: 3, Title: ": url"}
	if _, err := SetDone(path, fake, true); err == nil {
		t.Errorf("SetDone on a non-task checkbox = nil, want an error")
	}
	if !bytes.Equal(readFile(t, path), src) {
		t.Errorf("file changed, want it untouched")
	}
}

func writeFileForBench(path string, src []byte) error {
	return os.WriteFile(path, src, 0o644)
}

func TestSetDoneConcurrentEdit(t *testing.T) {
	orig := "- [ ] 1. a\n- [ ] 2. b\n"
	edited := "# Added while ticking\n\n- [ ] 1. a\n- [ ] 2. b\n"
	path := writeTemp(t, "p.md", []byte(orig))
	tk := Parse([]byte(orig)).Tasks[1]
	edits := 0
	p, err := setDone(path, []Task{tk}, true, func() {
		if edits == 0 {
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		edits++
	})
	if err != nil {
		t.Fatalf("setDone = %v", err)
	}
	want := "# Added while ticking\n\n- [ ] 1. a\n- [x] 2. b\n"
	if got := string(readFile(t, path)); got != want || string(p.Src) != want {
		t.Errorf("file = %q, want the edit kept and the task ticked: %q", got, want)
	}
	if edits != 2 {
		t.Errorf("the write was checked %d times, want 2 (one retry)", edits)
	}

	// A file that never settles is refused, not overwritten.
	n := 0
	_, err = setDone(path, []Task{Parse(readFile(t, path)).Tasks[0]}, true, func() {
		n++
		if err := os.WriteFile(path, []byte(want+strings.Repeat("\n", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "kept changing") {
		t.Errorf("setDone on a file that keeps changing = %v, want an error", err)
	}
	if got := string(readFile(t, path)); got != want+strings.Repeat("\n", n) {
		t.Errorf("file = %q, want the last edit untouched", got)
	}
}
