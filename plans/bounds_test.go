package plans

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestParseBounds(t *testing.T) {
	deepList := func(levels int) string {
		var b strings.Builder
		b.WriteString("## TODOs\n\n")
		for i := 0; i < levels; i++ {
			b.WriteString(strings.Repeat("  ", i) + "- [ ] x\n")
		}
		return b.String()
	}
	tests := []struct {
		name, src, invalid string
	}{
		{"plain", "## TODOs\n\n- [ ] 1. a\n", ""},
		{"quotes at the bound", strings.Repeat(">", MaxNesting) + " x\n", ""},
		{"quotes past the bound", "# T\n\n" + strings.Repeat(">", 100_000) + " x\n", "line 3 nests"},
		{"spaced quotes", strings.Repeat("> ", MaxNesting+1) + "x\n", "line 1 nests"},
		{"list markers on one line", strings.Repeat("- ", MaxNesting+1) + "x\n", "line 1 nests"},
		{"ordered markers", strings.Repeat("1. ", MaxNesting+1) + "x\n", "line 1 nests"},
		{"list nested by indentation", deepList(MaxNesting + 2), "nests block quotes or lists more than 32"},
		{"list within the bound", deepList(20), ""},
		{"too large", strings.Repeat("a", MaxPlanSize+1), "larger than 32 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Parse([]byte(tc.src))
			if (tc.invalid == "") != (p.Invalid == "") || !strings.Contains(p.Invalid, tc.invalid) {
				t.Fatalf("Parse(%s).Invalid = %q, want %q", tc.name, p.Invalid, tc.invalid)
			}
			if p.Invalid != "" && len(p.Tasks) != 0 {
				t.Errorf("Parse(%s) has %d tasks, want none for an invalid plan", tc.name, len(p.Tasks))
			}
		})
	}
}

func TestDiscoverListsInvalidPlansAndStops(t *testing.T) {
	dir := t.TempDir()
	pd := PlansDir(dir)
	if err := os.MkdirAll(pd, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(pd, name+".md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok", "## TODOs\n\n- [ ] 1. a\n")
	write("deep", strings.Repeat(">", 200<<10)+"\n")
	f, err := os.Create(filepath.Join(pd, "huge.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()

	all, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range all {
		got[p.Name] = p.Invalid
	}
	if got["ok"] != "" || !strings.Contains(got["deep"], "nests") || !strings.Contains(got["huge"], "larger than") {
		t.Errorf("Discover invalid reasons = %q", got)
	}
	for _, name := range []string{"deep", "huge"} {
		p, err := Find(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		if r := Validate(dir, p); r.OK() {
			t.Errorf("Validate(%s) is OK, want the bound as an error", name)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := DiscoverContext(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("DiscoverContext(cancelled) error = %v, want context.Canceled", err)
	}
}

func BenchmarkParseAtTheNestingBound(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 1<<20 { // throughput per byte; the bound is far larger
		sb.WriteString(strings.Repeat(">", MaxNesting) + " x\n")
	}
	src := []byte(sb.String())
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if p := Parse(src); p.Invalid != "" {
			b.Fatal(p.Invalid)
		}
	}
}

func TestDiscoverListsPlanFilesThatAreNotRegular(t *testing.T) {
	dir := t.TempDir()
	pd := PlansDir(dir)
	if err := os.MkdirAll(pd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pd, "ok.md"), []byte("## TODOs\n\n- [ ] 1. a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(pd, "pipe.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(pd, "zero.md")); err != nil {
		t.Fatal(err)
	}
	all, err := Discover(dir)
	if err != nil {
		t.Fatalf("Discover = %v, want the odd files listed, not an error", err)
	}
	got := map[string]string{}
	for _, p := range all {
		got[p.Name] = p.Invalid
	}
	if got["ok"] != "" || !strings.Contains(got["pipe"], "named pipe") || !strings.Contains(got["zero"], "character device") {
		t.Errorf("Discover invalid reasons = %q", got)
	}
	if _, err := Find(dir, "pipe"); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("Find(pipe) = %v, want a refusal naming the pipe", err)
	}
}
