package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("regular", link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		read     func(string, int64) ([]byte, error)
		path     string
		limit    int64
		want     string
		tooLarge bool
		is       error
	}{
		{"regular", ReadFile, regular, 5, "12345", false, nil},
		{"regular no follow", ReadFileNoFollow, regular, 5, "12345", false, nil},
		{"too large", ReadFile, regular, 4, "", true, nil},
		{"fifo", ReadFile, fifo, 1 << 20, "", false, ErrNotRegular},
		{"link to /dev/zero", ReadFile, zero, 1 << 20, "", false, ErrNotRegular},
		{"link followed", ReadFile, link, 5, "12345", false, nil},
		{"link not followed", ReadFileNoFollow, link, 5, "", false, ErrSymlink},
		{"zero not followed", ReadFileNoFollow, zero, 1 << 20, "", false, ErrSymlink},
		{"directory", ReadFile, dir, 1 << 20, "", false, ErrNotRegular},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read(tc.path, tc.limit)
			var tl *TooLargeError
			switch {
			case tc.tooLarge:
				if !errors.As(err, &tl) || tl.Limit != tc.limit {
					t.Fatalf("read(%s) error = %v, want a *TooLargeError with limit %d", tc.name, err, tc.limit)
				}
			case tc.is != nil:
				if !errors.Is(err, tc.is) {
					t.Fatalf("read(%s) error = %v, want %v", tc.name, err, tc.is)
				}
			case err != nil:
				t.Fatalf("read(%s) error = %v", tc.name, err)
			case string(got) != tc.want:
				t.Fatalf("read(%s) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestOpenNoFollowNeverWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "weave.lock")
	if err := os.Symlink(victim, lock); err != nil {
		t.Fatal(err)
	}
	f, err := OpenNoFollow(lock, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		f.Close()
		t.Fatal("OpenNoFollow(symlink) succeeded, want an error")
	}
	if !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenNoFollow(symlink) error = %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("victim = %q after OpenNoFollow, want it untouched", b)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 64 << 10: "64 KiB", 4 << 20: "4 MiB", 1500: "1500 B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
