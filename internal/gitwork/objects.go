package gitwork

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Trees and loose objects read and written without git, for the work a
// coordinator repeats for every task on objects a run itself just wrote
// (loose, small): the caller falls back to git for anything else. Only
// SHA-1 repositories are written here; a name of any other length is
// git's.

// maxLooseObject bounds the trees and blobs read from their files.
const maxLooseObject = 8 << 20

// treeEntry is one entry of a tree object: its mode as stored ("100644",
// "40000"...), its name and the hex name of its object.
type treeEntry struct {
	mode string
	name string
	sha  string
}

// isTree reports whether the entry names a tree (a directory).
func (e treeEntry) isTree() bool { return e.mode == "40000" }

// parseTree reads a tree object's body of SHA-1 names. ok is false when it
// is not exactly what git writes: a mode that is not one of git's, an
// empty name or one holding '/', names out of git's order or repeated.
func parseTree(body []byte) ([]treeEntry, bool) {
	var out []treeEntry
	for len(body) > 0 {
		sp := bytes.IndexByte(body, ' ')
		if sp < 0 {
			return nil, false
		}
		mode := string(body[:sp])
		switch mode {
		case "100644", "100755", "120000", "40000", "160000":
		default:
			return nil, false
		}
		body = body[sp+1:]
		nul := bytes.IndexByte(body, 0)
		if nul <= 0 || len(body) < nul+1+sha1.Size {
			return nil, false
		}
		name := string(body[:nul])
		if name == "." || name == ".." || bytes.IndexByte(body[:nul], '/') >= 0 {
			return nil, false
		}
		e := treeEntry{mode: mode, name: name, sha: hex.EncodeToString(body[nul+1 : nul+1+sha1.Size])}
		if len(out) > 0 && treeCompare(out[len(out)-1], e) >= 0 {
			return nil, false
		}
		out = append(out, e)
		body = body[nul+1+sha1.Size:]
	}
	return out, true
}

// treeCompare orders tree entries as git does: by name, a tree's name
// compared as if it ended in '/'.
func treeCompare(a, b treeEntry) int {
	an, bn := a.name, b.name
	if a.isTree() {
		an += "/"
	}
	if b.isTree() {
		bn += "/"
	}
	return bytes.Compare([]byte(an), []byte(bn))
}

// encodeTree is the body of the tree of entries, in git's order.
func encodeTree(entries []treeEntry) ([]byte, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, treeCompare)
	var b bytes.Buffer
	for i, e := range sorted {
		if i > 0 && sorted[i-1].name == e.name {
			return nil, fmt.Errorf("tree entry %q twice", e.name)
		}
		raw, err := hex.DecodeString(e.sha)
		if err != nil || len(raw) != sha1.Size {
			return nil, fmt.Errorf("tree entry %q: bad object name %q", e.name, e.sha)
		}
		b.WriteString(e.mode)
		b.WriteByte(' ')
		b.WriteString(e.name)
		b.WriteByte(0)
		b.Write(raw)
	}
	return b.Bytes(), nil
}

// looseTree is the entries and body of tree sha, read from its loose
// file; ok is false when it is not a loose SHA-1 tree as git writes it.
func (r *Repo) looseTree(ctx context.Context, sha string) ([]treeEntry, []byte, bool) {
	if len(sha) != 2*sha1.Size {
		return nil, nil, false
	}
	typ, body, ok := r.looseObjectMax(ctx, sha, maxLooseObject)
	if !ok || typ != "tree" {
		return nil, nil, false
	}
	entries, ok := parseTree(body)
	return entries, body, ok
}

// errNotLoose says an object could not be written as git writes it here.
var errNotLoose = errors.New("cannot write the object without git")

// writeLoose writes a loose object of type typ and body, as git writes
// one (zlib at git's loose-object level, read-only, moved into place),
// and returns its name. An object that is there already is kept.
func (r *Repo) writeLoose(ctx context.Context, typ string, body []byte) (string, error) {
	common, err := r.commonDir(ctx)
	if err != nil {
		return "", err
	}
	raw := append([]byte(typ+" "+strconv.Itoa(len(body))+"\x00"), body...)
	sum := sha1.Sum(raw)
	sha := hex.EncodeToString(sum[:])
	dir := filepath.Join(common, "objects", sha[:2])
	path := filepath.Join(dir, sha[2:])
	if freshen(path) || r.freshenPacked(ctx, sha) {
		return sha, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: %v", errNotLoose, err)
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return "", fmt.Errorf("%w: %v", errNotLoose, err)
	}
	defer os.Remove(f.Name())
	z := r.deflater(f)
	defer r.deflaters.Put(z)
	_, werr := z.Write(raw)
	if cerr := z.Close(); werr == nil {
		werr = cerr
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), 0o444)
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		return "", fmt.Errorf("write object %s: %w", short(sha), werr)
	}
	return sha, nil
}

// freshen marks the loose object at path as just written, as git does
// when it meets an object it was about to write: a prune deletes only
// unreferenced objects older than its grace period, so an object about to
// be referenced (an old, unreferenced copy of it delivered again) must not
// look old. It reports false when the object is not there or its time
// could not be set; the caller then writes it.
func freshen(path string) bool {
	now := time.Now()
	return os.Chtimes(path, now, now) == nil
}

// deflater is a zlib writer onto w at core.looseCompression's default
// level (speed over size, as git writes loose objects), taken from r's
// pool: each one holds some 300 KB of state, and a landing or a pack
// writes several objects. Put it back in r.deflaters once closed.
func (r *Repo) deflater(w io.Writer) *zlib.Writer {
	if z, ok := r.deflaters.Get().(*zlib.Writer); ok {
		z.Reset(w)
		return z
	}
	z, _ := zlib.NewWriterLevel(w, zlib.BestSpeed) // a valid level: no error
	return z
}
