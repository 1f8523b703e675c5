//go:build linux

package logfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// spare is the next log of a Logs, made before its name is known: an
// unnamed file (O_TMPFILE) in the directory the last log went to, made in
// the background while that log's task runs. Finding a free inode can be
// slow (ext4 without a journal scans past every inode freed in the last
// minutes), and this takes it off the next task's way. The spare becomes
// the next log by a link into the directory, opened through the project's
// root as any log is; never named, it is gone with its descriptor and
// leaves nothing behind, a crash included.
type spare struct {
	dir  string // as the log's path names it
	done chan struct{}
	fd   int // the unnamed file, or -1 when it could not be made
}

// prepare starts making a spare in the directory of path, the log just
// opened.
func (ls *Logs) prepare(path string) {
	if ls.spare != nil {
		return
	}
	rel, err := ls.inside.Lexical(filepath.Dir(path))
	if err != nil {
		return
	}
	s := &spare{dir: filepath.Dir(path), done: make(chan struct{}), fd: -1}
	ls.spare = s
	go func() {
		defer close(s.done)
		d, err := ls.r.Open(rel)
		if err != nil {
			return
		}
		defer d.Close()
		fd, err := unix.Openat(int(d.Fd()), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0o644)
		if err == nil {
			s.fd = fd
		}
	}()
}

// take names the spare path, when the spare was made in path's directory
// and nothing is at path yet; false leaves the log to the usual open (a
// log already there is appended to, a link planted there refused).
func (ls *Logs) take(path string) (*os.File, bool) {
	s := ls.spare
	if s == nil {
		return nil, false
	}
	<-s.done
	if s.fd < 0 || s.dir != filepath.Dir(path) {
		ls.discard()
		return nil, false
	}
	rel, err := ls.inside.Lexical(s.dir)
	if err != nil {
		ls.discard()
		return nil, false
	}
	// The directory is opened again, through the root: the one the spare
	// was made in may have been moved out of the project since.
	d, err := ls.r.Open(rel)
	if err != nil {
		ls.discard()
		return nil, false
	}
	defer d.Close()
	err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(s.fd), int(d.Fd()), filepath.Base(path), unix.AT_SYMLINK_FOLLOW)
	if errors.Is(err, unix.EEXIST) {
		// Kept for the next log.
		return nil, false
	}
	if err != nil {
		ls.discard()
		return nil, false
	}
	ls.spare = nil
	return os.NewFile(uintptr(s.fd), path), true
}

// discard lets the spare go, unnamed.
func (ls *Logs) discard() {
	s := ls.spare
	if s == nil {
		return
	}
	ls.spare = nil
	<-s.done
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
	}
}
