//go:build linux

package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// spare is a file made ahead, unnamed (O_TMPFILE), in the directory of the
// file to write: it has no name until commit links it, so a crash leaves
// nothing of it behind.
type spare struct {
	done chan struct{}
	fd   int // -1 when it could not be made
	err  error
}

// prepare starts making the next write's file in the background.
func (w *Writer) prepare() {
	if w.plain || w.next != nil {
		return
	}
	s := &spare{done: make(chan struct{}), fd: -1}
	w.next = s
	dir := filepath.Dir(w.path)
	go func() {
		defer close(s.done)
		fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			s.err = err
			return
		}
		s.fd = fd
	}()
}

// ready waits for s to be made and says whether it was.
func (s *spare) ready() bool {
	<-s.done
	return s.fd >= 0
}

// unsupported says the file system makes no unnamed files: it is not
// asked again.
func (s *spare) unsupported() bool {
	return errors.Is(s.err, unix.EOPNOTSUPP) || errors.Is(s.err, unix.EISDIR) || errors.Is(s.err, unix.EINVAL)
}

// commit writes data to s with mode perm, syncs it, and links it as tmp,
// a name nothing had: once it returns nil, tmp is the whole file on disk.
// s is closed either way; on an error tmp was not made.
func (s *spare) commit(data []byte, perm os.FileMode, tmp string) error {
	defer s.release()
	for b := data; len(b) > 0; {
		n, err := unix.Write(s.fd, b)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		b = b[n:]
	}
	if err := unix.Fchmod(s.fd, uint32(perm.Perm())); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	// Linked through /proc, as linkat's AT_EMPTY_PATH needs a privilege.
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(s.fd), unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW); err != nil {
		return &linkError{err}
	}
	// Synced once linked: where the directory's sync writes the directory
	// alone (ext4 without a journal), an inode synced before its link
	// would be on disk with no link, and the name renamed to it lost.
	if err := unix.Fsync(s.fd); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// linkError is a spare that could not be linked.
type linkError struct{ err error }

func (e *linkError) Error() string { return "link: " + e.err.Error() }
func (e *linkError) Unwrap() error { return e.err }

// lasting says a commit's error will come again at every write: a link
// across file systems, no /proc, no right to link. The writer then writes
// as WriteFile does.
func lasting(err error) bool {
	var le *linkError
	return errors.As(err, &le) && (errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOENT) ||
		errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EOPNOTSUPP))
}

// release closes s, once it is made; nil is nothing to release.
func (s *spare) release() {
	if s == nil {
		return
	}
	<-s.done
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
		s.fd = -1
	}
}
