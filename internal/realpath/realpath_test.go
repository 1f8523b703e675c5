package realpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree makes a project with names that contain "..", a directory, a file
// and links; it returns its real path.
func tree(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"docs", "a/b", "..d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"notes..txt", "docs/changes-v1..v2.md", "a/b/f", "..d/x.."} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"up":       "a/b/..",
		"deep":     "a/b",
		"loop":     "loop",
		"dangling": "docs/new..md",
		"out":      "/",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestResolve(t *testing.T) {
	root := tree(t)
	tests := []struct {
		path string
		want string // relative to root; "" wants an error
	}{
		{"notes..txt", "notes..txt"},
		{"docs/changes-v1..v2.md", "docs/changes-v1..v2.md"},
		{"new..txt", "new..txt"},
		{"docs/new..dir/x..y", "docs/new..dir/x..y"},
		{"..d/x..", "..d/x.."},
		{"...", "..."},
		{"missing..dir/../notes..txt", "notes..txt"},
		{"missing/../docs/changes-v1..v2.md", "docs/changes-v1..v2.md"},
		{"deep/../b/f", "a/b/f"},
		{"deep/../../notes..txt", "notes..txt"},
		{"up/b/f", "a/b/f"},
		{"dangling", "docs/new..md"},
		{"loop", ""},
		{"notes..txt/x", ""},
	}
	for _, tc := range tests {
		got, err := Resolve(root, tc.path)
		if tc.want == "" {
			if err == nil {
				t.Errorf("Resolve(%q) = %q, want an error", tc.path, got)
			}
			continue
		}
		if want := filepath.Join(root, tc.want); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v, want %q", tc.path, got, err, want)
		}
	}
	if got, err := Resolve(root, "out/etc/../tmp"); err != nil || got != "/tmp" {
		t.Errorf("Resolve(out/etc/../tmp) = %q, %v, want /tmp", got, err)
	}
}

// TestResolveLongPathIsLinear resolves a path of many ".."-bearing names
// and parents: the loop does a bounded amount of work per component.
func TestResolveLongPath(t *testing.T) {
	root := tree(t)
	p := strings.Repeat("x..y/../", 5000) + "notes..txt"
	got, err := Resolve(root, p)
	if want := filepath.Join(root, "notes..txt"); err != nil || got != want {
		t.Errorf("Resolve(5000 x missing..dir/..) = %q, %v, want %q", got, err, want)
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/p", true}, {"/p/a", true}, {"/p/..a", true}, {"/p/a..b", true},
		{"/", false}, {"/q", false}, {"/p2", false},
	} {
		if got := Within("/p", tc.path); got != tc.want {
			t.Errorf("Within(/p, %q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// fuzzDepth is how deep below the fuzz run's base directory each project
// root lies. Every ".." the fuzzer can write is capped (maxUps per name,
// maxSymlinkHops links), so even a wrong resolver's path, or the kernel's,
// never climbs out of the base: the oracle below creates files only there.
const (
	maxUps    = 2
	fuzzDepth = maxUps*(maxSymlinkHops+2) + 2
)

// capUps keeps at most maxUps ".." components in s and drops NUL bytes.
func capUps(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	parts := strings.Split(s, "/")
	ups := 0
	out := parts[:0]
	for _, p := range parts {
		if p == ".." {
			if ups == maxUps {
				continue
			}
			ups++
		}
		out = append(out, p)
	}
	return strings.Join(out, "/")
}

// FuzzResolve draws a path and three link targets in a project that holds
// names with ".." inside them, and checks Resolve against the kernel: it
// ends, never recursing (a stack overflow fails the fuzz run), and where it
// answers, that answer is the file the kernel reaches (compared with
// filepath.EvalSymlinks and os.SameFile for an existing file, and by
// creating the file through the path for a missing one), so Within on it is
// the true project boundary.
func FuzzResolve(f *testing.F) {
	for _, s := range [][4]string{
		{"notes..txt", "a", "b", "c"},
		{"docs/changes-v1..v2.md", "docs", "..", "/"},
		{"l1/../notes..txt", "a/b", "l2", "../x..y"},
		{"l1/new..txt", "l1", "l2", "l3"},
		{"l2/../../f", "docs", "a/b/..", "l1/.."},
		{"missing/../l3/z", "a", "b", "a/b/f"},
		{"a/b/../../docs/x..y/..", "/", "/a", "docs/new..md"},
		{"..d/x../", "..d", "..d/x..", "x.."},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	deep := filepath.Join(base, strings.Repeat("d/", fuzzDepth))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p, t1, t2, t3 string) {
		p = strings.TrimLeft(capUps(p), "/") // relative to the project
		if p == "" || len(p) > 512 {
			return
		}
		root, err := os.MkdirTemp(deep, "p")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(root)
		for _, d := range []string{"docs", "a/b", "..d"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"notes..txt", "docs/changes-v1..v2.md", "a/b/f", "..d/x.."} {
			if err := os.WriteFile(filepath.Join(root, name), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for i, target := range []string{t1, t2, t3} {
			target = capUps(target)
			if target == "" || len(target) > 256 {
				continue
			}
			if filepath.IsAbs(target) {
				target = root + target // absolute targets stay in the project
			}
			_ = os.Symlink(target, filepath.Join(root, []string{"l1", "a/l2", "l3"}[i]))
		}
		got, err := Resolve(root, p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || got != filepath.Clean(got) {
			t.Fatalf("Resolve(%q) = %q, want a clean absolute path", p, got)
		}
		if !Within(base, got) {
			t.Fatalf("Resolve(%q) = %q, outside the base %s no link or name can leave", p, got, base)
		}
		in := filepath.Join(root, "") + "/" + p
		if ev, err := filepath.EvalSymlinks(in); err == nil && !strings.HasSuffix(p, "/") {
			if ev != got {
				t.Fatalf("Resolve(%q) = %q, filepath.EvalSymlinks = %q", p, got, ev)
			}
		}
		want, serr := os.Stat(in)
		if serr == nil {
			have, err := os.Stat(got)
			if err != nil || !os.SameFile(want, have) {
				t.Fatalf("Resolve(%q) = %q, which is not the file the kernel opens (%v)", p, got, err)
			}
			return
		}
		if !errors.Is(serr, fs.ErrNotExist) {
			return
		}
		// Missing: a write through the path must land on got. (A missing
		// directory followed by ".." is taken lexically, so got may exist;
		// the kernel then refuses the create.)
		w, err := os.OpenFile(in, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return // the kernel refuses it too (a missing directory, say)
		}
		defer w.Close()
		made, _ := w.Stat()
		have, err := os.Stat(got)
		if err != nil || !os.SameFile(made, have) {
			t.Fatalf("Resolve(%q) = %q, but creating the path made another file (%v)", p, got, err)
		}
	})
}
