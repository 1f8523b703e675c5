// Package logfile is the host log's file: .weave/logs/weave.log, rotated by
// size so that no plugin and no run can grow it without limit, opened
// without following a symbolic link and only inside its project (a logs
// directory linked out of the project is refused, not written through),
// and written through a slog handler that bounds each record.
//
// Rotation renames weave.log to weave.log.1 (and .1 to .2, up to the number
// of backups kept) and starts a new file. Several weave processes may log to
// one project; a process that finds the file rotated by another reopens it.
package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/weavehq/weave/internal/safefile"
)

// File is an append-only log file that rotates past a size. It is safe for
// concurrent use.
type File struct {
	inside  safefile.Inside
	path    string
	maxSize int64
	backups int

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (creating it and its directory) the log at path inside the
// project root, which rotates once it would pass maxSize bytes, keeping
// backups older files. A path that is a symbolic link, not a regular file,
// or leads out of root is refused.
func Open(root, path string, maxSize int64, backups int) (*File, error) {
	l := &File{inside: safefile.Inside{Root: root}, path: path, maxSize: maxSize, backups: max(backups, 1)}
	if err := l.inside.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := l.inside.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && linkedElsewhere(fi) {
		err = fmt.Errorf("%s has another name (a hard link); remove it", l.path)
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("open log: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past its
// size. A record is never split across two files.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, errors.New("write log: closed")
	}
	if l.size+int64(len(p)) > l.maxSize && l.size > 0 {
		if err := l.rotate(); err != nil {
			// Keep logging into the file we have rather than lose records.
			l.size = 0
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate moves the current file to .1, shifting older ones, and opens a new
// one. When another process rotated the file already, it only reopens.
func (l *File) rotate() error {
	mine, err := l.f.Stat()
	if err != nil {
		return err
	}
	if now, err := os.Lstat(l.path); err == nil && os.SameFile(mine, now) {
		for i := l.backups - 1; i >= 1; i-- {
			if err := l.inside.Rename(l.backup(i), l.backup(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if err := l.inside.Rename(l.path, l.backup(1)); err != nil {
			return err
		}
	}
	old := l.f
	if err := l.open(); err != nil {
		l.f = old
		return err
	}
	_ = old.Close()
	return nil
}

func (l *File) backup(i int) string { return l.path + "." + strconv.Itoa(i) }

// Close closes the file.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Logs opens log files inside one project through the project's directory
// held open (an os.Root) from OpenLogs to Close: a run that opens a log per
// task resolves the project's path once, not for every log, and makes the
// log's directory only when it is missing. Every log it opens keeps Open's
// rules, and a log it cannot open that way is left to Open, whose error
// says why. It is safe for concurrent use.
type Logs struct {
	inside safefile.Inside
	r      *os.Root

	mu sync.Mutex
	// spare is the next log, made ahead of its name (spare_linux.go);
	// nil when none is being made.
	spare *spare
}

// OpenLogs holds the project directory root open for Logs.Open.
func OpenLogs(root string) (*Logs, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open logs: %w", err)
	}
	return &Logs{inside: safefile.Inside{Root: root}, r: r}, nil
}

// Open is Open(root, path, maxSize, backups) through the held directory.
func (ls *Logs) Open(path string, maxSize int64, backups int) (*File, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	defer ls.prepare(path)
	if f, ok := ls.take(path); ok {
		return &File{inside: ls.inside, path: path, maxSize: maxSize, backups: max(backups, 1), f: f}, nil
	}
	const flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	f, err := ls.inside.OpenFileAt(ls.r, path, flag, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err = ls.inside.MkdirAllAt(ls.r, filepath.Dir(path), 0o755); err == nil {
			f, err = ls.inside.OpenFileAt(ls.r, path, flag, 0o644)
		}
	}
	if err != nil {
		return Open(ls.inside.Root, path, maxSize, backups)
	}
	fi, err := f.Stat()
	if err == nil && linkedElsewhere(fi) {
		err = fmt.Errorf("%s has another name (a hard link); remove it", path)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	return &File{inside: ls.inside, path: path, maxSize: maxSize, backups: max(backups, 1), f: f, size: fi.Size()}, nil
}

// Close lets the project directory go; the logs opened stay open.
func (ls *Logs) Close() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.discard()
	return ls.r.Close()
}
