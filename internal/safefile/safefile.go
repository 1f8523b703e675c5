// Package safefile opens and reads the files a project can contain
// (.weave/state.json, the lock, config, plans, logs) without trusting them:
// a read is bounded in size, only a regular file is read (a named pipe would
// block forever, a device such as /dev/zero never ends), and the files weave
// owns can be opened without following a symbolic link, so that a link
// planted in .weave/ never makes weave write through it.
//
// Inside goes further for the files weave keeps under .weave/ (sessions,
// the progress cache, the logs, the process ledger): every one is opened,
// listed, made or renamed relative to the project root, so that no link on
// the way, a directory's included, takes a read or a write out of the
// project, and the kernel checks that on the descriptors (os.Root).
//
// Opening never blocks: files are opened with O_NONBLOCK and checked with
// fstat on the open descriptor, so the check and the read are about the same
// file.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the errors for a path that is a named pipe, a
// device, a socket or a directory where a regular file is expected.
var ErrNotRegular = errors.New("not a regular file")

// ErrSymlink is wrapped by the errors of the NoFollow functions for a path
// that is a symbolic link.
var ErrSymlink = errors.New("a symbolic link, which weave does not follow here")

// TooLargeError says that a file is larger than its reader accepts.
type TooLargeError struct {
	Path  string
	Size  int64 // the size seen, at least Limit+1
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s (the most weave reads from it)", e.Path, FormatSize(e.Limit))
}

// FormatSize writes n bytes the way people read sizes: 512 B, 64 KiB, 4 MiB.
func FormatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// Open opens path read-only, following symbolic links, and fails unless
// it is a regular file.
func Open(path string) (*os.File, error) { return open(path, os.O_RDONLY, 0, true) }

// OpenNoFollow opens path with flag (os.O_RDWR|os.O_CREATE, say) and perm
// for a new file, refusing a symbolic link in the last component (the
// kernel refuses it: O_NOFOLLOW) and anything but a regular file.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return open(path, flag, perm, false)
}

func open(path string, flag int, perm os.FileMode, follow bool) (*os.File, error) {
	flag |= openFlags
	if !follow {
		if noFollow == 0 {
			// No O_NOFOLLOW here: refuse a link seen before the open.
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
			}
		}
		flag |= noFollow
	}
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		if !follow && isLoop(err) {
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
			}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: notRegular(fi.Mode())}
	}
	return f, nil
}

// notRegular names what a file is instead of a regular file.
func notRegular(m fs.FileMode) error {
	return fmt.Errorf("%s, %w", Kind(m), ErrNotRegular)
}

// Kind names the kind of file m describes, for messages: "a named pipe",
// "a directory", "a symbolic link".
func Kind(m fs.FileMode) string {
	what := "a special file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case m.IsRegular():
		what = "a regular file"
	}
	return what
}

// ReadFile reads the regular file at path, following symbolic links, and
// refuses one larger than limit bytes with a *TooLargeError.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadFileNoFollow is ReadFile that refuses a symbolic link.
func ReadFileNoFollow(path string, limit int64) ([]byte, error) {
	f, err := OpenNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads f, opened from path, to its end, at most limit bytes, and
// refuses more with a *TooLargeError. The size is checked before reading
// and again while reading, since a file can grow.
func ReadAll(f *os.File, path string, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: fi.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}
