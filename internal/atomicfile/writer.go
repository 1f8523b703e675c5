package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Writer writes one file atomically, again and again, with the guarantees
// of WriteFile: readers see the old content or the new, and the new survives
// a crash once WriteFile has returned. Where it can (Linux), it makes the
// file of its next write ahead, unnamed, while the caller does other work:
// on a file system where finding a free inode is slow (ext4 without a
// journal scans past every inode freed in the last minutes), a run saving
// its state once per task need not wait for it. A Writer is safe for
// concurrent use; Close lets the file made ahead go.
type Writer struct {
	path string

	mu    sync.Mutex
	next  *spare // the next write's file, being made or made; nil when none
	plain bool   // the file system makes no unnamed files: WriteFile alone
	seq   uint64 // tells the Writer's temporary names apart
}

// NewWriter returns a Writer of path.
func NewWriter(path string) *Writer { return &Writer{path: path} }

// WriteFile writes data to the Writer's path as WriteFile(path, data, perm)
// does.
func (w *Writer) WriteFile(data []byte, perm os.FileMode) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.plain {
		return WriteFile(w.path, data, perm)
	}
	s := w.next
	w.next = nil
	if s == nil || !s.ready() {
		if s != nil && s.unsupported() {
			w.plain = true
		}
		s.release()
		err := WriteFile(w.path, data, perm)
		w.prepare()
		return err
	}
	if fi, err := os.Lstat(w.path); err == nil {
		if !fi.Mode().IsRegular() {
			s.release()
			return fmt.Errorf("write %s: not a regular file (%s); replace it with a plain file", w.path, fi.Mode().Type())
		}
		perm = fi.Mode().Perm()
	}
	dir := filepath.Dir(w.path)
	// The name is WriteFile's, so RemoveTemps knows a crash's leftover;
	// its number starts with 0, as none of CreateTemp's does.
	w.seq++
	tmp := filepath.Join(dir, "."+filepath.Base(w.path)+".tmp"+strconv.Itoa(os.Getpid())+".0"+strconv.FormatUint(w.seq, 10))
	if err := s.commit(data, perm, tmp); err != nil {
		// The file made ahead could not be used (the name taken, the
		// directory moved to another file system, no /proc): the usual
		// way, and from then on when it would fail again.
		w.plain = lasting(err)
		err = WriteFile(w.path, data, perm)
		w.prepare()
		return err
	}
	if err := os.Rename(tmp, w.path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: rename: %w", w.path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", w.path, err)
	}
	w.prepare()
	return nil
}

// Close lets the file made for the next write go; it leaves nothing on
// disk. The Writer writes on as WriteFile does after it.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next.release()
	w.next, w.plain = nil, true
	return nil
}
