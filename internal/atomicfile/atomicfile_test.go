package atomicfile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name     string
		existing []byte // nil: no file before the write
		oldPerm  os.FileMode
		perm     os.FileMode
		data     []byte
		wantPerm os.FileMode
	}{
		{name: "new file gets perm", perm: 0o640, data: []byte("hello\n"), wantPerm: 0o640},
		{name: "existing file keeps its mode", existing: []byte("old"), oldPerm: 0o600, perm: 0o644, data: []byte("new"), wantPerm: 0o600},
		{name: "empty data", existing: []byte("old"), oldPerm: 0o644, perm: 0o600, data: nil, wantPerm: 0o644},
		{name: "binary and CRLF bytes", perm: 0o644, data: []byte("a\r\nb\x00\xff"), wantPerm: 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.txt")
			if tt.existing != nil {
				if err := os.WriteFile(path, tt.existing, tt.oldPerm); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tt.oldPerm); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, tt.data, tt.perm); err != nil {
				t.Fatalf("WriteFile(%s) = %v, want nil", path, err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.data) {
				t.Errorf("content = %q, want %q", got, tt.data)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS != "windows" && fi.Mode().Perm() != tt.wantPerm {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tt.wantPerm)
			}
			assertOnlyFile(t, dir, "f.txt")
		})
	}
}

func TestWriteFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{link, sub} {
		if err := WriteFile(path, []byte("new"), 0o644); err == nil {
			t.Errorf("WriteFile(%s) = nil, want an error", path)
		}
	}
	got, err := os.ReadFile(target)
	if err != nil || string(got) != "keep" {
		t.Errorf("symlink target = %q, %v, want %q untouched", got, err, "keep")
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link was replaced: %v, %v", fi, err)
	}
	assertOnlyFile(t, dir, "link", "sub", "target")
}

func TestWriteFileMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "f")
	if err := WriteFile(path, []byte("x"), 0o644); err == nil {
		t.Errorf("WriteFile(%s) = nil, want an error", path)
	}
}

func TestWriteFileReadOnlyDirLeavesTarget(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs a non-root POSIX user for a read-only directory")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	if err := WriteFile(path, []byte("new"), 0o644); err == nil {
		t.Fatalf("WriteFile in read-only dir = nil, want an error")
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Errorf("content = %q, want %q", got, "old")
	}
}

func assertOnlyFile(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if len(got) != len(want) {
		t.Fatalf("dir holds %v, want %v (a temp file left behind?)", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("dir holds %v, want %v", got, want)
		}
	}
}

func BenchmarkWriteFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f")
	data := bytes.Repeat([]byte("x"), 4096)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true command:", err)
	}
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	name := func(base string, pid int) string { return fmt.Sprintf(".%s.tmp%d.12345", base, pid) }
	files := map[string]bool{ // name: removed
		name("state.json", dead.Process.Pid): true,
		name("plan.md", dead.Process.Pid):    true,
		name("state.json", os.Getpid()):      false, // a write in progress here
		name("plan.md", live.Process.Pid):    false, // a write in progress elsewhere
		".plan.md.tmp987654":                 false, // old naming, recent
		".old.md.tmp123456":                  true,  // old naming, an hour old
		"plan.md":                            false,
		".plan.md.tmpx":                      false,
	}
	for n := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, ".old.md.tmp123456"), old, old); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveTemps(dir)
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range files {
		_, statErr := os.Stat(filepath.Join(dir, n))
		if gone := os.IsNotExist(statErr); gone != want {
			t.Errorf("RemoveTemps: %s removed = %v, want %v", n, gone, want)
		}
	}
	if len(removed) != 3 {
		t.Errorf("RemoveTemps() = %v, want 3 names", removed)
	}
	if got, err := RemoveTemps(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Errorf("RemoveTemps(missing) = %v, %v, want nil, nil", got, err)
	}
}

func TestWriteFileNamesTempsWithItsPID(t *testing.T) {
	dir := t.TempDir()
	// A temp file left by this writer is never taken for a leftover.
	if err := WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, ".f.tmp"+strconv.Itoa(os.Getpid())+".*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !tempName.MatchString(filepath.Base(f.Name())) {
		t.Errorf("temp name %q does not match the leftover pattern", filepath.Base(f.Name()))
	}
}
