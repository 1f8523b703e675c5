package gitwork

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"os"
	"strconv"
)

// A worktree's index is read here, without git, where a task's commit is
// written from it (taskcommit.go) and its tracked paths are told apart from
// what a task left behind (clean.go). Only an index exactly as git writes
// one for a plain worktree is read: version 2 or 3 without extended flags,
// every entry at stage 0, its checksum right, no extension that changes
// what the entries mean (a split or sparse index). Anything else says
// "cannot tell" and the caller asks git.

// indexEntry is one path of an index: its mode as a tree stores it
// ("100644"...) and its object's hex name.
type indexEntry struct {
	path string
	mode string
	sha  string
}

// maxIndex bounds the index files read here; a larger one is git's.
const maxIndex = 16 << 20

// readIndex reads the index file at path; ok is false when it is not one
// read here.
func readIndex(path string) ([]indexEntry, bool) {
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 12+sha1.Size || len(data) > maxIndex {
		return nil, false
	}
	body, sum := data[:len(data)-sha1.Size], data[len(data)-sha1.Size:]
	if h := sha1.Sum(body); !bytes.Equal(h[:], sum) {
		return nil, false
	}
	if string(body[:4]) != "DIRC" {
		return nil, false
	}
	if v := binary.BigEndian.Uint32(body[4:8]); v != 2 && v != 3 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(body[8:12]))
	if n > len(body)/62 {
		return nil, false
	}
	out := make([]indexEntry, 0, n)
	off := 12
	for range n {
		// ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each),
		// the object name, the flags.
		const fixed = 40 + sha1.Size + 2
		if off+fixed > len(body) {
			return nil, false
		}
		e := body[off:]
		mode := binary.BigEndian.Uint32(e[24:28])
		flags := binary.BigEndian.Uint16(e[40+sha1.Size:])
		// An extended entry (intent to add, skip-worktree) or one of a
		// conflict's stages is not committed as it stands.
		if flags&0x4000 != 0 || flags&0x3000 != 0 {
			return nil, false
		}
		nameLen := int(flags & 0x0fff)
		name := e[fixed:]
		if nameLen == 0x0fff {
			nameLen = bytes.IndexByte(name, 0)
		}
		if nameLen <= 0 || nameLen >= len(name) || name[nameLen] != 0 {
			return nil, false
		}
		m, ok := indexMode(mode)
		if !ok {
			return nil, false
		}
		p := string(name[:nameLen])
		if len(out) > 0 && out[len(out)-1].path >= p {
			return nil, false
		}
		out = append(out, indexEntry{path: p, mode: m, sha: hex.EncodeToString(e[40 : 40+sha1.Size])})
		// Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
		off += (fixed + nameLen + 8) &^ 7
	}
	if off > len(body) {
		return nil, false
	}
	for ext := body[off:]; len(ext) > 0; {
		if len(ext) < 8 {
			return nil, false
		}
		size := int(binary.BigEndian.Uint32(ext[4:8]))
		if size > len(ext)-8 {
			return nil, false
		}
		// Optional extensions (cache tree, resolve undo, untracked
		// cache, fsmonitor, end of index, offset table) begin with an
		// upper-case letter and change nothing of the entries; a split
		// index ("link") or a sparse one ("sdir") does.
		if c := ext[0]; c < 'A' || c > 'Z' {
			return nil, false
		}
		ext = ext[8+size:]
	}
	return out, true
}

// indexMode is an index entry's mode as a tree stores it.
func indexMode(mode uint32) (string, bool) {
	switch mode {
	case 0o100644, 0o100755, 0o120000, 0o160000:
		return strconv.FormatUint(uint64(mode), 8), true
	}
	return "", false
}
