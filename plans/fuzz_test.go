package plans

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// referenceParser is goldmark's block parser with its own paragraphs.
var referenceParser = newMarkdownParser(false)

func addSeeds(f *testing.F, add func(src []byte)) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		add(src)
	}
	for _, s := range []string{
		"- [ ]: x\n", "- [\t] x\n", "-\t[ ] x\n", "- [ ]\n", "> - [x] q\n", "1) [X] o\n",
		"- [ ] a\n  ```\n  - [ ] b\n", "\xef\xbb\xbf- [ ] bom\r\n", "- [ ] a\n  ---\n", "* [ ] [x]: y\n",
		"Title\n===\n## TODOs\n- [ ] a\n  **What**: b\n  ===\n", "[x]: /u\n===\n- [ ] a\n", "- [ ] t\n\n  para\n  ---\n\n  [r]: /u\n  more\n",
		"[a]: /u\n\"t\n\"x [b]: /v\n[c]: /w\n**Estimated Effort**: S\n", "[a]: /u\n(t\nu) y\n[b]:\n<v>\n'q'\nrest\n",
		"[ ]: /u\n[\n]: /v\n[a\nb]: /w 'x\ny'\n- [ ] a\n", "[a]: <b\n[a]: /u \"t\" z\n[b]: /v\n",
		"- [ ] 2. a [after: 1, x] [SERIAL] [needs: gpu,] [budget: $2]\n  **Depends**: #1 (b, c), 3-5\n- [ ] 1. [serial](u) [serial][x]\n",
	} {
		add([]byte(s))
	}
}

func FuzzParse(f *testing.F) {
	addSeeds(f, func(src []byte) { f.Add(src) })
	f.Fuzz(func(t *testing.T, src []byte) {
		p := Parse(src)
		checkOffsets(t, p)
		// Parse's raw paragraphs must not change what is read from the
		// plan: compare with goldmark's own paragraphs.
		if ref, _ := parseWith(context.Background(), referenceParser, src); !reflect.DeepEqual(p, ref) {
			t.Fatalf("Parse differs from the reference parse:\n got %+v\nwant %+v", p, ref)
		}
		pr := p.Progress()
		if pr.Total != len(p.Tasks) || pr.Completed > pr.Total {
			t.Fatalf("Progress() = %+v with %d tasks", pr, len(p.Tasks))
		}
		for _, tk := range p.Tasks {
			_ = tk.Key()
		}
	})
}

// FuzzToggle flips one task and flips it back through the code SetDone uses
// (setMark), checking that only the mark byte changes and that the task is
// still a task in both states.
func FuzzToggle(f *testing.F) {
	addSeeds(f, func(src []byte) { f.Add(src, uint(0)); f.Add(src, uint(2)) })
	f.Fuzz(func(t *testing.T, src []byte, pick uint) {
		p := Parse(src)
		if len(p.Tasks) == 0 {
			return
		}
		tk := p.Tasks[pick%uint(len(p.Tasks))]
		out, p2, err := setMark(src, tk, !tk.Done)
		if err != nil {
			t.Fatalf("setMark(task %d, %v) = %v", tk.Index, !tk.Done, err)
		}
		if len(out) != len(src) {
			t.Fatalf("toggle changed the length from %d to %d", len(src), len(out))
		}
		for i := range src {
			if out[i] != src[i] && i != tk.Mark {
				t.Fatalf("toggle changed byte %d (mark at %d)", i, tk.Mark)
			}
		}
		if len(p2.Tasks) != len(p.Tasks) {
			t.Fatalf("toggle changed the task count from %d to %d", len(p.Tasks), len(p2.Tasks))
		}
		checkOffsets(t, p2)
		back, _, err := setMark(out, p2.Tasks[tk.Index], tk.Done)
		if err != nil {
			t.Fatalf("setMark back = %v", err)
		}
		want := src
		if src[tk.Mark] == 'X' {
			want = bytes.Clone(src)
			want[tk.Mark] = 'x' // ticking writes a lower-case x
		}
		if !bytes.Equal(back, want) {
			t.Fatalf("toggle then untoggle did not give back the original bytes")
		}
	})
}
