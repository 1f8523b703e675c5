package plans

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/yuin/goldmark/text"

	"github.com/weavehq/weave/internal/atomicfile"
)

// genPlan writes a Pattern-template plan with n tasks, every third done.
func genPlan(n int) []byte {
	var b bytes.Buffer
	b.WriteString("# Generated plan\n\n## TL;DR\n> **Estimated Effort**: Large\n\n## Context\nGenerated.\n\n## Objectives\n- [ ] all done\n\n## TODOs\n\n")
	for i := 1; i <= n; i++ {
		mark := " "
		if i%3 == 0 {
			mark = "x"
		}
		fmt.Fprintf(&b, "- [%s] %d. Task number %d [category: gen]\n", mark, i, i)
		fmt.Fprintf(&b, "  **What**: Do thing %d.\n  **Files**: `pkg/f%d.go` (new)\n  **Acceptance**: `go test ./pkg` passes\n\n", i, i)
	}
	b.WriteString("## Verification\n- [ ] tests pass\n")
	return b.Bytes()
}

func BenchmarkParse(b *testing.B) {
	for _, n := range []int{10, 1000, 100000} {
		src := genPlan(n)
		b.Run("tasks="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				p := Parse(src)
				if pr := p.Progress(); pr.Total != n+1 {
					b.Fatalf("Progress().Total = %d, want %d (the tasks and the Verification item)", pr.Total, n+1)
				}
			}
		})
	}
}

// BenchmarkSetDone100000 ticks and unticks a task in the middle of a
// 100,000-task plan on disk: read, parse, patch one byte, atomic write
// (with fsyncs).
func BenchmarkSetDone100000(b *testing.B) {
	src := genPlan(100000)
	path := filepath.Join(b.TempDir(), "big.md")
	if err := writeFileForBench(path, src); err != nil {
		b.Fatal(err)
	}
	tk := Parse(src).Tasks[50000]
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := SetDone(path, tk, !tk.Done)
		if err != nil {
			b.Fatal(err)
		}
		tk = p.Tasks[tk.Index]
	}
}

// BenchmarkSetDoneIn100000 ticks and unticks a task in the middle of a
// 100,000-task plan through the tick door runs use: a stat says the file is
// the one last read or written, and the mark is patched where it stands in
// the file (checked, written, fsynced) and in the plan in memory.
func BenchmarkSetDoneIn100000(b *testing.B) {
	src := genPlan(100000)
	path := filepath.Join(b.TempDir(), "big.md")
	if err := writeFileForBench(path, src); err != nil {
		b.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	i := 50000
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if p, err = SetDoneIn(p, p.Tasks[i], !p.Tasks[i].Done); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTickFloor100000 is the floor under BenchmarkSetDoneIn100000: the
// least a durable one-byte change costs, the byte written in place and the
// file fsynced (open, pwrite, fsync, close), nothing else.
func BenchmarkTickFloor100000(b *testing.B) {
	src := genPlan(100000)
	path := filepath.Join(b.TempDir(), "big.md")
	if err := writeFileForBench(path, src); err != nil {
		b.Fatal(err)
	}
	off := int64(bytes.Index(src, []byte("- [ ]")) + 3)
	mark := []byte{' '}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if mark[0] == ' ' {
			mark[0] = 'x'
		} else {
			mark[0] = ' '
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt(mark, off); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTickRewrite100000 is what a tick cost when it wrote the whole
// plan to a temporary file and renamed it over the plan (temp file, fsync,
// rename, fsync of the directory): the O(size) way, for comparison.
func BenchmarkTickRewrite100000(b *testing.B) {
	src := genPlan(100000)
	path := filepath.Join(b.TempDir(), "big.md")
	if err := writeFileForBench(path, src); err != nil {
		b.Fatal(err)
	}
	off := bytes.Index(src, []byte("- [ ]")) + 3
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if src[off] == ' ' {
			src[off] = 'x'
		} else {
			src[off] = ' '
		}
		if err := atomicfile.WriteFile(path, src, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoldmarkFloor is goldmark's stock block parse of the 1,000-task
// plan alone (no inline parsers): the floor under BenchmarkParse/tasks=1000.
func BenchmarkGoldmarkFloor(b *testing.B) {
	src := genPlan(1000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		referenceParser.Parse(text.NewReader(src))
	}
}
