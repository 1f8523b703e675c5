package plans

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// A tick changes one byte of the plan: the mark between "[" and "]". It is
// written where it stands (pwrite of that byte, then fsync), not by writing
// the whole file to a temporary and renaming it over the plan, so that a
// tick costs the same in a plan of ten tasks as in one of 100,000: the
// rename floor is O(size) (a 10 MB plan is 10 MB written and synced per
// tick), the in-place floor is one page.
//
// Why this cannot corrupt the plan:
//   - a process killed at any point either made the one write(2) or did not;
//   - on power loss, the byte's sector reaches the disk whole or not at all
//     (sector writes are atomic on the devices file systems support), and
//     even a page torn between sectors holds either the old or the new mark,
//     as no other byte of it differs; the metadata (mtime) is journaled;
//   - a reader sees the old byte or the new one, never anything else.
//
// At worst a tick is lost, which the work state covers: the task that was in
// flight runs again. Before writing, the file must still be the version the
// plan was read from (same size and, where the platform has them, inode and
// change time; the three bytes "[", mark, "]" as read), and after writing
// the path must still name the file written: otherwise the caller starts
// over the slow way, reading the file again. The write keeps the file's
// inode, owner, mode and links, as an editor saving in place would.

// errStale says that the file is no longer the version a plan was read
// from, so a patch in place would be a guess.
var errStale = errors.New("the plan file changed since it was read")

// errNoPatch says that the file cannot be written in place (read-only, or
// the platform opens no file without following links); the caller writes a
// new file instead.
var errNoPatch = errors.New("the plan file cannot be patched in place")

// patchMarks writes the mark c at each of offs in the plan file at path, in
// place and durably, when the file is still the version p was read from;
// arounds are the three bytes at each off-1 as p read them. want is the key
// p holds, or the zero key when the caller compared the file's bytes
// instead. Each mark is checked before any is written, then all are
// written and synced once, so that ticking several tasks together costs
// one fsync; a process killed between two of the writes leaves some of the
// marks written, each one whole. It returns the file's stat after the
// write.
func patchMarks(path string, offs []int, arounds [][]byte, c byte, size int, want fileKey) (fs.FileInfo, error) {
	f, err := openForPatch(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errStale
		}
		return nil, fmt.Errorf("%w: %v", errNoPatch, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != int64(size) || (want != fileKey{} && keyOf(fi) != want) {
		return nil, errStale
	}
	var got [3]byte
	for i, off := range offs {
		if _, err := f.ReadAt(got[:], int64(off-1)); err != nil || !bytes.Equal(got[:], arounds[i]) {
			return nil, errStale
		}
	}
	for _, off := range offs {
		if _, err := f.WriteAt([]byte{c}, int64(off)); err != nil {
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	// An editor may have renamed a new file over the plan between the open
	// and the write; then the bytes went to the old file, and the new one is
	// to be ticked the slow way.
	if now, err := os.Stat(path); err != nil || !os.SameFile(now, fi) {
		return nil, errStale
	}
	return fi, nil
}
