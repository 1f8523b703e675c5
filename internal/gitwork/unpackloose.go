package gitwork

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A small bundle's pack (a task's commit, a base's new landings) is most
// often a few whole objects a run wrote itself (packloose.go): a commit, a
// few trees and blobs. Its objects, the ones git unpack-objects --strict
// would write, are checked here at least as strictly as git checks them
// and written as one pack (packstore.go), rather than by that process,
// which a coordinator and its workers would start for every task. What is
// taken:
//
//   - a version 2 pack of at most unpackLimit objects, its object count
//     and its trailing SHA-1 over all of it right, nothing after it;
//   - each object a commit, tree or blob stored whole (no delta), its zlib
//     stream git's own kind (a 32 KiB window, no dictionary), inflating to
//     exactly its declared size, and all of them bounded in size;
//   - each tree as git writes one: git's modes, entries in git's order,
//     no name twice, no empty name, ".", "..", '/', and none that git
//     might read as .git or one of its special files;
//   - each commit a tree line, parent lines, an author and a committer of
//     git's shape, and nothing else before its message;
//   - every object a commit or tree names in the pack or in the
//     repository (loose, or whole in a pack read here), of the type it is
//     named as.
//
// Anything else (a delta, a tag, a symlink or submodule, a name starting
// ".git" but .gitignore, a name git's checks of other file systems read,
// an object missing or stored as a delta, a repository whose config or
// history asks for more) is git's to decide, as before: this path takes
// only what git takes too. Objects are written only once every one is
// checked, and no ref moves here.

// Bounds of a pack unpacked here; more is git's.
const (
	maxUnpackBytes = 32 << 20 // all its objects inflated
	maxUnpackName  = 255      // a tree entry's name
)

// unpackObject is an object of a pack being unpacked.
type unpackObject struct {
	typ  string
	sha  string
	body []byte
}

// unpackLoose writes the objects of pack into r, checked as above, as one
// pack of them (one loose object when it is one); ok is false when it
// wrote none and git is to unpack the pack.
func (r *Repo) unpackLoose(ctx context.Context, pack []byte) bool {
	objs, ok := readPack(pack)
	if !ok || !r.unpackPlain(ctx) || !r.plainHistory(ctx) {
		return false
	}
	common, err := r.commonDir(ctx)
	if err != nil {
		return false
	}
	inPack := make(map[string]string, len(objs))
	for _, o := range objs {
		inPack[o.sha] = o.typ
	}
	c := &linkCheck{r: r, ctx: ctx, common: common, inPack: inPack, loose: map[string]string{}}
	for _, o := range objs {
		switch o.typ {
		case "tree":
			if !c.tree(o.body) {
				return false
			}
		case "commit":
			if !c.commit(o.body) {
				return false
			}
		}
	}
	if ctx.Err() != nil {
		return false
	}
	// One pack of them (packstore.go), those r holds already with them,
	// as fresh as the rest. When it cannot be written, git writes them.
	stored := make([]storedObject, len(objs))
	for i, o := range objs {
		stored[i] = storedObject{sha: o.sha, typ: o.typ, body: o.body}
	}
	return r.writeObjects(ctx, stored) == nil
}

// unpackPlain reports whether r's config asks for nothing an object
// written here would miss (signing, another encoding, shared permissions,
// forced fsync, another hash: plainConfig), for unpacking and landing
// alike. git config --list fails on an empty config (no file at all):
// nothing asked, but then nothing is trusted without knowing.
func (r *Repo) unpackPlain(ctx context.Context) bool {
	list, ok := r.configList(ctx)
	return ok && plainConfig(list)
}

// configList is r's config as git config --list -z gives it, asked of git
// once per Repo (one run) for all that is done here without git; ok is
// false when git could not say.
func (r *Repo) configList(ctx context.Context) (list string, ok bool) {
	r.mu.Lock()
	if r.config != nil {
		c := *r.config
		r.mu.Unlock()
		return c.list, c.ok
	}
	r.mu.Unlock()
	out, err := run(ctx, r.Root, nil, "config", "--list", "-z")
	if err != nil && ctx.Err() != nil {
		return "", false // asked again next time
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.config = &configRead{list: out, ok: err == nil}
	return out, err == nil
}

// configRead is what configList read.
type configRead struct {
	list string
	ok   bool
}

// readPack reads the objects of pack; ok is false when it is not a pack
// taken here (see above), whatever git would say of it.
func readPack(pack []byte) ([]unpackObject, bool) {
	if len(pack) < 12+sha1.Size || string(pack[:4]) != "PACK" || binary.BigEndian.Uint32(pack[4:8]) != 2 {
		return nil, false
	}
	n := binary.BigEndian.Uint32(pack[8:12])
	if n == 0 || n > unpackLimit {
		return nil, false
	}
	objs := make([]unpackObject, 0, n)
	seen := make(map[string]bool, n)
	off, total := 12, 0
	var in inflater
	for range n {
		typ, size, used, ok := packObjectHeader(pack[off:])
		if !ok || total+size > maxUnpackBytes {
			return nil, false
		}
		off += used
		// git's deflate: a 32 KiB window and no preset dictionary. zlib
		// of a smaller window refuses distances Go's reader allows.
		if off+2 > len(pack) || pack[off] != 0x78 || pack[off+1]&0x20 != 0 {
			return nil, false
		}
		z, ok := in.at(pack[off:])
		if !ok {
			return nil, false
		}
		// bytes.Reader is an io.ByteReader: the reader takes no byte past
		// the stream, so what it took is the object's length in the pack.
		body, err := io.ReadAll(io.LimitReader(z, int64(size)+1))
		if err != nil || len(body) != size {
			return nil, false // short, long, or not a whole zlib stream
		}
		off = len(pack) - in.src.Len()
		total += size
		sha := newStored(typ, body).sha
		if seen[sha] {
			return nil, false
		}
		seen[sha] = true
		objs = append(objs, unpackObject{typ: typ, sha: sha, body: body})
	}
	if off+sha1.Size != len(pack) {
		return nil, false
	}
	if sum := sha1.Sum(pack[:off]); !bytes.Equal(sum[:], pack[off:]) {
		return nil, false
	}
	return objs, true
}

// packObjectHeader reads an object's header in a pack: its type (whole
// objects only), its size (bounded), and the header's length.
func packObjectHeader(b []byte) (typ string, size, used int, ok bool) {
	if len(b) == 0 {
		return "", 0, 0, false
	}
	switch b[0] >> 4 & 7 {
	case 1:
		typ = "commit"
	case 2:
		typ = "tree"
	case 3:
		typ = "blob"
	default:
		return "", 0, 0, false // a tag, a delta, or no type
	}
	size = int(b[0] & 0x0f)
	shift := 4
	c := b[0]
	used = 1
	for c&0x80 != 0 {
		if used >= len(b) || shift > 25 {
			return "", 0, 0, false
		}
		c = b[used]
		used++
		size |= int(c&0x7f) << shift
		shift += 7
	}
	if size > maxLooseObject {
		return "", 0, 0, false
	}
	return typ, size, used, true
}

// linkCheck checks the objects a pack's trees and commits name: each in
// the pack or a loose object of the repository, of the type named.
type linkCheck struct {
	r      *Repo
	ctx    context.Context
	common string
	inPack map[string]string // name: type
	loose  map[string]string // loose objects' types read
	z      io.ReadCloser
}

// has reports whether object sha is there as typ.
func (c *linkCheck) has(sha, typ string) bool {
	if t, ok := c.inPack[sha]; ok {
		return t == typ
	}
	t, ok := c.looseType(sha)
	return ok && t == typ
}

// looseType is the type a loose object's header gives, as git reads it
// for an object it is not unpacking (its header only); ok is false when
// there is no such file or it is not one git wrote.
func (c *linkCheck) looseType(sha string) (string, bool) {
	if t, ok := c.loose[sha]; ok {
		return t, t != ""
	}
	t := c.readLooseType(sha)
	c.loose[sha] = t
	return t, t != ""
}

func (c *linkCheck) readLooseType(sha string) string {
	f, err := os.Open(filepath.Join(c.common, "objects", sha[:2], sha[2:]))
	if os.IsNotExist(err) {
		typ, _ := c.r.packedType(c.ctx, sha)
		return typ
	}
	if err != nil {
		return ""
	}
	defer f.Close()
	if c.z == nil {
		c.z, err = zlib.NewReader(f)
	} else {
		err = c.z.(zlib.Resetter).Reset(f, nil)
	}
	if err != nil {
		return ""
	}
	var head [32]byte
	n, _ := io.ReadFull(c.z, head[:])
	h, _, ok := bytes.Cut(head[:n], []byte{0})
	if !ok {
		return ""
	}
	typ, size, _ := strings.Cut(string(h), " ")
	if _, err := strconv.ParseUint(size, 10, 63); err != nil || size[0] == '0' && size != "0" {
		return ""
	}
	switch typ {
	case "commit", "tree", "blob", "tag":
		return typ
	}
	return ""
}

// tree checks a tree's body and the objects it names.
func (c *linkCheck) tree(body []byte) bool {
	entries, ok := parseTree(body)
	if !ok {
		return false
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		// A file and a directory of one name sort apart: parseTree's
		// order check does not see them twice.
		if names[e.name] || !plainName(e.name, e.mode) || e.sha == nullSHA {
			return false
		}
		names[e.name] = true
		switch e.mode {
		case "40000":
			ok = c.has(e.sha, "tree")
		case "100644", "100755":
			ok = c.has(e.sha, "blob")
		default:
			// A symlink's target and a submodule are checked by git's
			// newer fsck in ways not repeated here.
			ok = false
		}
		if !ok {
			return false
		}
	}
	return true
}

// nullSHA is the name git's fsck refuses in a tree.
const nullSHA = "0000000000000000000000000000000000000000"

// plainName reports whether a tree entry's name is one git's fsck has
// nothing to say of: ASCII without '\\', ':' or '~' (which its checks of
// NTFS and HFS+ names read), not starting ".git" in any case but a
// .gitignore file, not too long. parseTree refused empty names, ".",
// ".." and '/'.
func plainName(name, mode string) bool {
	if len(name) > maxUnpackName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < ' ' || c >= 0x7f || c == '\\' || c == ':' || c == '~' {
			return false
		}
	}
	if len(name) >= 4 && strings.EqualFold(name[:4], ".git") {
		return name == ".gitignore" && mode != "40000"
	}
	// NTFS drops trailing dots and spaces: ". " or ".. " would be "." or
	// "..".
	return strings.Trim(name, ". ") != ""
}

// commit checks a commit's head (tree, parents, author, committer, and
// nothing else) and the objects it names.
func (c *linkCheck) commit(body []byte) bool {
	head, _, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok || bytes.IndexByte(body, 0) >= 0 {
		return false
	}
	lines := strings.Split(string(head), "\n")
	if len(lines) < 3 {
		return false
	}
	tree, ok := strings.CutPrefix(lines[0], "tree ")
	if !ok || !sha1Hex(tree) || !c.has(tree, "tree") {
		return false
	}
	lines = lines[1:]
	for len(lines) > 2 {
		p, ok := strings.CutPrefix(lines[0], "parent ")
		if !ok || !sha1Hex(p) || !c.has(p, "commit") {
			return false
		}
		lines = lines[1:]
	}
	if len(lines) != 2 {
		return false
	}
	author, ok1 := strings.CutPrefix(lines[0], "author ")
	committer, ok2 := strings.CutPrefix(lines[1], "committer ")
	if !ok1 || !ok2 {
		return false
	}
	_, ok1 = identDate(author)
	_, ok2 = identDate(committer)
	return ok1 && ok2
}

// sha1Hex reports whether s is a SHA-1 name as git writes it (lower case)
// and not the null name.
func sha1Hex(s string) bool {
	return len(s) == 2*sha1.Size && isHex(s) && s != nullSHA
}
