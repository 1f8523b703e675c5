package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestInsideRefuses(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := func(f func() error) {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	mk(func() error { return os.MkdirAll(filepath.Join(root, "dir"), 0o755) })
	mk(func() error { return os.WriteFile(filepath.Join(root, "dir", "ok"), []byte("fine"), 0o644) })
	mk(func() error { return syscall.Mkfifo(filepath.Join(root, "dir", "fifo"), 0o644) })
	mk(func() error { return os.Symlink("/dev/zero", filepath.Join(root, "dir", "zero")) })
	mk(func() error { return os.Symlink(victim, filepath.Join(root, "dir", "out")) })
	mk(func() error { return os.Symlink("ok", filepath.Join(root, "dir", "in")) })
	mk(func() error { return os.Symlink(outside, filepath.Join(root, "linked")) })
	mk(func() error { return os.Symlink("dir", filepath.Join(root, "alias")) })
	in := Inside{Root: root}
	at := func(p string) string { return filepath.Join(root, p) }

	tests := []struct {
		path string
		want string
		is   error
	}{
		{"dir/ok", "fine", nil},
		{"alias/ok", "fine", nil}, // a directory link that stays inside
		{"dir/fifo", "", ErrNotRegular},
		{"dir/zero", "", ErrOutside},
		{"dir/out", "", ErrOutside},
		{"dir/in", "", ErrSymlink},
		{"linked/victim", "", ErrOutside},
		{"dir/missing", "", fs.ErrNotExist},
	}
	for _, tc := range tests {
		got, err := in.ReadFile(at(tc.path), 1<<20)
		if tc.is != nil {
			if !errors.Is(err, tc.is) {
				t.Errorf("ReadFile(%s) = %q, %v, want %v", tc.path, got, err, tc.is)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("ReadFile(%s) = %q, %v, want %q", tc.path, got, err, tc.want)
		}
	}
	if _, err := in.ReadFile(filepath.Join(outside, "victim"), 1<<20); err == nil {
		t.Error("ReadFile(a path beside the root) succeeded, want a refusal")
	}
	// Writes: appending through a link out, or creating in a directory
	// linked out, never reaches the outside.
	for _, p := range []string{"dir/out", "linked/new", "linked/victim"} {
		if f, err := in.OpenFile(at(p), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			f.Close()
			t.Errorf("OpenFile(%s, append) succeeded, want a refusal", p)
		}
	}
	if err := in.MkdirAll(at("linked/sub"), 0o755); !errors.Is(err, ErrOutside) {
		t.Errorf("MkdirAll(linked/sub) = %v, want ErrOutside", err)
	}
	if err := in.Rename(at("dir/ok"), at("linked/ok")); !errors.Is(err, ErrOutside) {
		t.Errorf("Rename(dir/ok, linked/ok) = %v, want ErrOutside", err)
	}
	if _, err := in.ReadDir(at("linked")); !errors.Is(err, ErrOutside) {
		t.Errorf("ReadDir(linked) = %v, want ErrOutside", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim = %q, want it untouched", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside holds %d entries, want the victim alone", len(entries))
	}
	// What stays inside works.
	f, err := in.OpenFile(at("dir/log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("OpenFile(dir/log, append) = %v", err)
	}
	f.Close()
	if err := in.MkdirAll(at("a/b"), 0o755); err != nil {
		t.Errorf("MkdirAll(a/b) = %v", err)
	}
	if err := in.Rename(at("dir/ok"), at("a/b/ok")); err != nil {
		t.Errorf("Rename(dir/ok, a/b/ok) = %v", err)
	}
	if entries, err := in.ReadDir(at("a/b")); err != nil || len(entries) != 1 {
		t.Errorf("ReadDir(a/b) = %v, %v, want ok", entries, err)
	}
}

// OpenFileAt, through a root held open, refuses what OpenFile refuses:
// a planted link, a fifo, a directory linked out of the root, a path
// outside it; nothing outside is written.
func TestOpenFileAtRefuses(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{
		func() error { return os.MkdirAll(filepath.Join(root, "dir"), 0o755) },
		func() error { return syscall.Mkfifo(filepath.Join(root, "dir", "fifo"), 0o644) },
		func() error { return os.Symlink(victim, filepath.Join(root, "dir", "out")) },
		func() error { return os.Symlink("new", filepath.Join(root, "dir", "in")) },
		func() error { return os.Symlink(outside, filepath.Join(root, "linked")) },
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	in := Inside{Root: root}
	const flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	for _, tc := range []struct {
		path string
		is   error
	}{
		{filepath.Join(root, "dir", "fifo"), nil}, // never blocks: refused one way or another
		{filepath.Join(root, "dir", "out"), ErrSymlink},
		{filepath.Join(root, "dir", "in"), ErrSymlink},
		{filepath.Join(root, "linked", "victim"), ErrOutside},
		{filepath.Join(root, "linked", "new"), ErrOutside},
		{filepath.Join(root, "missing", "new"), fs.ErrNotExist},
	} {
		if f, err := in.OpenFileAt(r, tc.path, flag, 0o644); err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenFileAt(%s) error = %v, want %v", tc.path, err, tc.is)
		}
	}
	if _, err := in.OpenFileAt(r, victim, flag, 0o644); err == nil {
		t.Errorf("OpenFileAt(%s), a path outside the root, opened it", victim)
	}
	if err := in.MkdirAllAt(r, filepath.Join(root, "linked", "sub"), 0o755); !errors.Is(err, ErrOutside) {
		t.Errorf("MkdirAllAt through a link out = %v, want ErrOutside", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim = %q, want it untouched", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside holds %d entries, want only the victim", len(entries))
	}
	if err := in.MkdirAllAt(r, filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := in.OpenFileAt(r, filepath.Join(root, "a", "b", "log"), flag, 0o644)
	if err != nil {
		t.Fatalf("OpenFileAt(a/b/log) = %v", err)
	}
	f.Close()
}
