package gitwork

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The objects a run writes together (a bundle's received objects, a
// landing's trees and commit) are stored as one pack and its index, as
// git stores what it fetches, rather than as one loose file each. A loose
// object costs a file and often a directory; where making a file is slow
// (ext4 without a journal skips, one by one, the inodes freed in the last
// minutes) a coordinator's landings and fetches were mostly that. A pack
// of them costs two files whatever their number.
//
// The packs are git's own format (version 2, each object whole, no
// delta) with a version 2 index, written to temporary files and moved
// into place, the pack before its index: git sees a pack only through its
// index. New objects are not synced to disk, as git does not sync the
// loose objects it writes for a fetch this small (transfer.unpackLimit);
// a config that asks for syncing (core.fsync, core.fsyncObjectFiles)
// keeps everything here git's (plainConfig). A pack that takes in the
// objects of others is synced, with its directory, before they go.
//
// The objects are read back here from any pack whose index is small
// enough and whose objects are stored whole (packed by this file, or by
// git without a delta), each checked against its name; anything else (a
// delta, a large pack, a broken one) says "cannot tell" and the caller
// asks git, as for an object that is not loose.
//
// Small packs add up: one or two per task. Once there are more than
// maxSmallPacks packs of at most smallPack bytes, the next pack written
// here takes in the objects of those it can read whole, and they are
// removed, as git repack removes the packs it replaced (mergeSmall),
// within bounds: what one index read here holds, 64 MiB inflated, and no
// pack git is told to keep as it is.

// Bounds of the packs read, written and merged here.
const (
	maxIdxBytes   = 1 << 20   // an index read here: some 37,000 objects
	smallPack     = 256 << 10 // a pack merged into the next one written
	maxSmallPacks = 32        // small packs kept before they are merged
)

// maxIdxObjects is the most objects an index of maxIdxBytes holds: a pack
// written here is one read here.
const maxIdxObjects = (maxIdxBytes - 8 - 1024 - 40) / 28

// idxHeader is the start of a version 2 index: its magic and version.
const idxHeader = "\xfftOc\x00\x00\x00\x02"

// packIndex is the index of one pack, read whole.
type packIndex struct {
	base string // the pack's path without .pack or .idx
	idx  []byte
	n    int
	size int64 // of the pack
	// unmergeable says an object of the pack is not one read here (a
	// delta, a tag), or they are too large to merge: mergeSmall does not
	// read it again.
	unmergeable atomic.Bool
}

// parseIdx reads a version 2 index of at most maxIdxBytes with no large
// offsets, its checksum right; ok is false otherwise.
func parseIdx(base string, data []byte) (*packIndex, bool) {
	if len(data) < 8+1024+40 || len(data) > maxIdxBytes || string(data[:8]) != idxHeader {
		return nil, false
	}
	prev := uint32(0)
	for i := range 256 {
		v := binary.BigEndian.Uint32(data[8+4*i:])
		if v < prev {
			return nil, false
		}
		prev = v
	}
	n := int(prev)
	if len(data) != 8+1024+n*28+40 {
		return nil, false // large offsets: a pack past 2 GiB is git's
	}
	if sum := sha1.Sum(data[:len(data)-20]); !bytes.Equal(sum[:], data[len(data)-20:]) {
		return nil, false
	}
	return &packIndex{base: base, idx: data, n: n}, true
}

// find is the offset of object name (20 bytes) in the pack.
func (p *packIndex) find(name []byte) (int64, bool) {
	fan := p.idx[8:]
	lo := 0
	if name[0] > 0 {
		lo = int(binary.BigEndian.Uint32(fan[4*(int(name[0])-1):]))
	}
	hi := int(binary.BigEndian.Uint32(fan[4*int(name[0]):]))
	names := p.idx[8+1024:]
	i := lo + sort.Search(hi-lo, func(k int) bool {
		return bytes.Compare(names[(lo+k)*20:(lo+k+1)*20], name) >= 0
	})
	if i >= hi || !bytes.Equal(names[i*20:(i+1)*20], name) {
		return 0, false
	}
	return p.offset(i)
}

// name is the name of the index's i-th object (20 bytes).
func (p *packIndex) name(i int) []byte { return p.idx[8+1024+i*20 : 8+1024+(i+1)*20] }

// offset is where the index's i-th object starts in the pack; ok is false
// for a large offset (a pack past 2 GiB is git's).
func (p *packIndex) offset(i int) (int64, bool) {
	off := binary.BigEndian.Uint32(p.idx[8+1024+p.n*24+4*i:])
	return int64(off), off&0x80000000 == 0
}

// packSum is the pack's checksum as its index names it.
func (p *packIndex) packSum() []byte { return p.idx[len(p.idx)-40 : len(p.idx)-20] }

// packSet is what is known of a repository's packs.
type packSet struct {
	// noMerge says a merge could not be made durable here: small packs
	// are left to git from then on.
	noMerge atomic.Bool

	mu    sync.Mutex
	mod   time.Time // objects/pack's modification time when last listed
	packs map[string]*packIndex
}

// packIndexes lists r's packs known here: those of the last listing of
// objects/pack, which is listed again when again is set and it changed
// since (or changed so recently that its time cannot tell).
func (r *Repo) packIndexes(ctx context.Context, again bool) []*packIndex {
	common, err := r.commonDir(ctx)
	if err != nil {
		return nil
	}
	dir := filepath.Join(common, "objects", "pack")
	s := &r.packs
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.packs == nil || again {
		fi, err := os.Stat(dir)
		// A directory's time moves in the kernel's coarse ticks: within a
		// second of it, a change may not show.
		if err == nil && (s.packs == nil || !fi.ModTime().Equal(s.mod) || time.Since(s.mod) < 2*time.Second) {
			s.list(dir, fi.ModTime())
		}
	}
	out := make([]*packIndex, 0, len(s.packs))
	for _, p := range s.packs {
		out = append(out, p)
	}
	return out
}

// list reads the indexes in dir that are not known yet, and forgets those
// gone.
func (s *packSet) list(dir string, mod time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	now := map[string]*packIndex{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		base := filepath.Join(dir, name)
		if p := s.packs[base]; p != nil {
			now[base] = p
		} else if p := loadIndex(base); p != nil {
			now[base] = p
		}
	}
	s.packs, s.mod = now, mod
}

// loadIndex reads the index at base+".idx" and checks it against its
// pack's trailer; nil when it is not one read here.
func loadIndex(base string) *packIndex {
	fi, err := os.Stat(base + ".idx")
	if err != nil || fi.Size() > maxIdxBytes {
		return nil
	}
	data, err := os.ReadFile(base + ".idx")
	if err != nil {
		return nil
	}
	p, ok := parseIdx(base, data)
	if !ok {
		return nil
	}
	f, err := os.Open(base + ".pack")
	if err != nil {
		return nil
	}
	defer f.Close()
	pfi, err := f.Stat()
	if err != nil || pfi.Size() < 12+20 {
		return nil
	}
	var head [12]byte
	var tail [20]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return nil
	}
	if _, err := f.ReadAt(tail[:], pfi.Size()-20); err != nil {
		return nil
	}
	if string(head[:8]) != "PACK\x00\x00\x00\x02" || int(binary.BigEndian.Uint32(head[8:])) != p.n || !bytes.Equal(tail[:], p.packSum()) {
		return nil
	}
	p.size = pfi.Size()
	return p
}

// add makes a pack written here known without listing the directory.
func (s *packSet) add(p *packIndex) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.packs != nil {
		s.packs[p.base] = p
	}
}

// findPacked finds object sha in r's packs known here, listing them again
// once when it is not found.
func (r *Repo) findPacked(ctx context.Context, sha string) (*packIndex, int64, bool) {
	name, err := hex.DecodeString(sha)
	if err != nil || len(name) != sha1.Size {
		return nil, 0, false
	}
	for _, again := range []bool{false, true} {
		for _, p := range r.packIndexes(ctx, again) {
			if off, ok := p.find(name); ok {
				return p, off, true
			}
		}
	}
	return nil, 0, false
}

// packedObject is the type and body of object sha read from a pack, of
// at most max bytes and stored whole, checked against its name; ok is
// false otherwise.
func (r *Repo) packedObject(ctx context.Context, sha string, max int) (typ string, body []byte, ok bool) {
	p, off, ok := r.findPacked(ctx, sha)
	if !ok {
		return "", nil, false
	}
	typ, body, ok = p.read(off, max)
	if !ok {
		if _, err := os.Stat(p.base + ".pack"); !os.IsNotExist(err) {
			return "", nil, false
		}
		// Merged into another pack since it was listed (by this process
		// or by git's repack): look again once.
		r.packs.remove(p.base)
		if p, off, ok = r.findPacked(ctx, sha); !ok {
			return "", nil, false
		}
		if typ, body, ok = p.read(off, max); !ok {
			return "", nil, false
		}
	}
	if newStored(typ, body).sha != sha {
		return "", nil, false
	}
	return typ, body, true
}

// packedType is the type of object sha as its pack's entry gives it
// (whole objects only), as git reads an object it is not unpacking.
func (r *Repo) packedType(ctx context.Context, sha string) (string, bool) {
	p, off, ok := r.findPacked(ctx, sha)
	if !ok {
		return "", false
	}
	f, err := os.Open(p.base + ".pack")
	if err != nil {
		return "", false
	}
	defer f.Close()
	var head [16]byte
	n, _ := f.ReadAt(head[:], off)
	typ, _, _, ok := packObjectHeader(head[:n])
	return typ, ok
}

// read reads the whole object at off of at most max bytes.
func (p *packIndex) read(off int64, max int) (typ string, body []byte, ok bool) {
	f, err := os.Open(p.base + ".pack")
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	var head [16]byte
	n, _ := f.ReadAt(head[:], off)
	typ, size, used, ok := packObjectHeader(head[:n])
	if !ok || size > max {
		return "", nil, false
	}
	z, err := zlib.NewReader(io.NewSectionReader(f, off+int64(used), p.size-off-int64(used)))
	if err != nil {
		return "", nil, false
	}
	defer z.Close()
	// Exactly size bytes, then the stream's end.
	body = make([]byte, size)
	if _, err := io.ReadFull(z, body); err != nil {
		return "", nil, false
	}
	if n, err := z.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		return "", nil, false
	}
	return typ, body, true
}

// freshenPacked marks the pack holding sha as just written, as git does
// for an object it was about to write and found packed; false when no
// pack known here holds it.
func (r *Repo) freshenPacked(ctx context.Context, sha string) bool {
	p, _, ok := r.findPacked(ctx, sha)
	if !ok {
		return false
	}
	// A cruft pack's objects expire by the times its .mtimes gives each:
	// git writes such an object again, and so does the caller.
	if _, err := os.Lstat(p.base + ".mtimes"); !os.IsNotExist(err) {
		return false
	}
	return freshen(p.base + ".pack")
}

// storedObject is an object to store, named.
type storedObject struct {
	sha  string
	typ  string
	body []byte
}

// newStored names an object to store.
func newStored(typ string, body []byte) storedObject {
	h := sha1.New()
	h.Write([]byte(typ + " " + strconv.Itoa(len(body)) + "\x00"))
	h.Write(body)
	return storedObject{sha: hex.EncodeToString(h.Sum(nil)), typ: typ, body: body}
}

// writeObjects stores objs in r: a loose object when there is one, else
// one pack of them all. An object r holds already is not looked for: in
// the new pack it is as fresh as the rest (a prune spares it), and git
// reads an object from whichever pack holds it. Only a repository whose
// config asks for nothing more is written to here (plainConfig); the
// callers check it.
func (r *Repo) writeObjects(ctx context.Context, objs []storedObject) error {
	var todo []storedObject
	seen := map[string]bool{}
	for _, o := range objs {
		if !seen[o.sha] {
			seen[o.sha] = true
			todo = append(todo, o)
		}
	}
	switch len(todo) {
	case 0:
		return nil
	case 1:
		sha, err := r.writeLoose(ctx, todo[0].typ, todo[0].body)
		if err == nil && sha != todo[0].sha {
			err = fmt.Errorf("write object %s: it was written as %s", short(todo[0].sha), short(sha))
		}
		return err
	}
	return r.writePack(ctx, todo)
}

// packEntry is where an object went in a pack being written.
type packEntry struct {
	name []byte
	crc  uint32
	off  uint32
}

// encodePack is the pack (version 2) of objs, each whole, and where each
// went in it.
func (r *Repo) encodePack(objs []storedObject) ([]byte, []packEntry) {
	var b bytes.Buffer
	b.WriteString("PACK")
	_ = binary.Write(&b, binary.BigEndian, uint32(2))
	_ = binary.Write(&b, binary.BigEndian, uint32(len(objs)))
	z := r.deflater(&b)
	defer r.deflaters.Put(z)
	entries := make([]packEntry, 0, len(objs))
	for _, o := range objs {
		start := b.Len()
		writePackHeader(&b, packTypes[o.typ], len(o.body))
		z.Reset(&b)
		_, _ = z.Write(o.body)
		_ = z.Close()
		name, _ := hex.DecodeString(o.sha)
		entries = append(entries, packEntry{name: name, crc: crc32.ChecksumIEEE(b.Bytes()[start:]), off: uint32(start)})
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes(), entries
}

// writePackHeader writes an object's header in a pack: its type, then its
// size, seven bits a byte after the first four, the high bit saying more
// follow.
func writePackHeader(b *bytes.Buffer, typ byte, size int) {
	c := typ<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		b.WriteByte(c | 0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	b.WriteByte(c)
}

// encodeIdx is the version 2 index of a pack whose checksum is packSum.
func encodeIdx(entries []packEntry, packSum []byte) []byte {
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].name, entries[j].name) < 0 })
	var b bytes.Buffer
	b.WriteString(idxHeader)
	var fan [256]uint32
	for _, e := range entries {
		fan[e.name[0]]++
	}
	total := uint32(0)
	for i := range fan {
		total += fan[i]
		_ = binary.Write(&b, binary.BigEndian, total)
	}
	for _, e := range entries {
		b.Write(e.name)
	}
	for _, e := range entries {
		_ = binary.Write(&b, binary.BigEndian, e.crc)
	}
	for _, e := range entries {
		_ = binary.Write(&b, binary.BigEndian, e.off)
	}
	b.Write(packSum)
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// errPackTooLarge says a pack would need large offsets in its index.
var errPackTooLarge = errors.New("pack too large to write here")

// writePack writes objs, whole and named, as one pack and its index in
// r, the objects of the small packs it replaces with them (mergeSmall).
// A merge that cannot be made durable is not made: objs are written
// alone.
func (r *Repo) writePack(ctx context.Context, objs []storedObject) error {
	common, err := r.commonDir(ctx)
	if err != nil {
		return err
	}
	if len(objs) > maxIdxObjects {
		return errPackTooLarge
	}
	dir := filepath.Join(common, "objects", "pack")
	var olds []*packIndex
	merged := objs
	if !r.packs.noMerge.Load() {
		merged, olds = r.mergeSmall(ctx, objs)
	}
	err = r.placePack(dir, merged, olds)
	if err != nil && len(olds) > 0 {
		r.packs.noMerge.Store(true)
		err = r.placePack(dir, objs, nil)
	}
	return err
}

// placePack writes objs as a pack and its index in dir, and removes olds,
// whose objects objs hold, once the new pack is synced with its
// directory; when that cannot be, olds stay, and no merge is tried again
// by r (packSet.noMerge).
func (r *Repo) placePack(dir string, objs []storedObject, olds []*packIndex) error {
	pack, entries := r.encodePack(objs)
	if len(pack) >= 1<<31 {
		return errPackTooLarge
	}
	sum := pack[len(pack)-20:]
	base := filepath.Join(dir, "pack-"+hex.EncodeToString(sum))
	idx := encodeIdx(entries, sum)
	// Objects merged in were safe on disk, perhaps in packs git synced:
	// their new pack is synced, and the directory that names it, before
	// the packs they leave go.
	sync := len(olds) > 0
	if _, err := os.Stat(base + ".idx"); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write a pack: %w", err)
		}
		if err := placeFile(dir, "tmp_pack_", base+".pack", pack, sync); err != nil {
			return err
		}
		if err := placeFile(dir, "tmp_idx_", base+".idx", idx, sync); err != nil {
			_ = os.Remove(base + ".pack")
			return err
		}
	} else if !freshen(base + ".pack") {
		return fmt.Errorf("write a pack: %s is there but cannot be freshened", filepath.Base(base))
	} else if sync {
		// There already, from a write that may not have been synced.
		if err := syncPath(base + ".pack"); err != nil {
			olds = nil
		}
	}
	p, ok := parseIdx(base, idx)
	if !ok {
		return fmt.Errorf("write a pack: its index does not read back")
	}
	p.size = int64(len(pack))
	r.packs.add(p)
	if sync && syncPath(dir) != nil {
		// The objects are all there; the packs they came from stay.
		r.packs.noMerge.Store(true)
		return nil
	}
	// The packs merged go once their objects are in the new one, the
	// index first: git stops reading a pack without it.
	for _, old := range olds {
		if old.base == base {
			continue
		}
		r.packs.remove(old.base)
		_ = os.Remove(old.base + ".idx")
		_ = os.Remove(old.base + ".rev")
		_ = os.Remove(old.base + ".pack")
	}
	return nil
}

// syncPath syncs the file or directory at path (a directory: the names
// moved into it are on disk).
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// inflater inflates zlib streams that start in byte slices, with one
// reader for them all: each holds some 40 KB of state.
type inflater struct {
	z   io.ReadCloser
	src bytes.Reader
}

// at is the reader of the stream at the start of b; ok is false when it
// is not a zlib stream.
func (in *inflater) at(b []byte) (io.Reader, bool) {
	in.src.Reset(b)
	var err error
	if in.z == nil {
		in.z, err = zlib.NewReader(&in.src)
	} else {
		err = in.z.(zlib.Resetter).Reset(&in.src, nil)
	}
	return in.z, err == nil
}

// placeFile writes data to a new file in dir, made read-only (as git
// makes its packs), synced when sync is set, and moves it to path.
func placeFile(dir, prefix, path string, data []byte, sync bool) error {
	var f *os.File
	var err error
	for range 8 {
		var name [8]byte
		_, _ = rand.Read(name[:])
		f, err = os.OpenFile(filepath.Join(dir, prefix+hex.EncodeToString(name[:])), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if !os.IsExist(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(data)
	if werr == nil && sync {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), werr)
	}
	return nil
}

// remove forgets a pack.
func (s *packSet) remove(base string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.packs, base)
}

// mergeSmall adds to objs the objects of r's small packs when there are
// more than maxSmallPacks of them, and returns the packs whose objects it
// took; a pack it cannot read whole (a delta, a broken object) is left
// alone.
func (r *Repo) mergeSmall(ctx context.Context, objs []storedObject) ([]storedObject, []*packIndex) {
	common, err := r.commonDir(ctx)
	if err != nil {
		return objs, nil
	}
	var small []*packIndex
	for _, p := range r.packIndexes(ctx, false) {
		if p.size <= smallPack && !p.unmergeable.Load() {
			small = append(small, p)
		}
	}
	if len(small) <= maxSmallPacks {
		return objs, nil
	}
	// A multi-pack index names the packs it covers: they are git's to
	// replace.
	if _, err := os.Lstat(filepath.Join(common, "objects", "pack", "multi-pack-index")); !os.IsNotExist(err) {
		return objs, nil
	}
	if small = slices.DeleteFunc(small, func(p *packIndex) bool { return !p.plain() }); len(small) <= maxSmallPacks {
		return objs, nil
	}
	// A repository whose objects are precious keeps every pack.
	if list, ok := r.configList(ctx); !ok || preciousObjects(list) {
		return objs, nil
	}
	have := map[string]bool{}
	total, count := 0, len(objs)
	for _, o := range objs {
		have[o.sha] = true
		total += len(o.body)
	}
	var took []*packIndex
	for _, p := range small {
		// Both bounds are checked on the pack's own headers, before its
		// objects are inflated.
		size, ok := p.wholeSize()
		if !ok {
			continue
		}
		if size > maxMergeBytes/4 {
			p.unmergeable.Store(true) // a few large objects: git's to repack
			continue
		}
		if total+size > maxMergeBytes || count+p.n > maxIdxObjects {
			continue
		}
		more, ok := p.objects()
		if !ok {
			// Gone since it was listed (merged by another), or not
			// whole: only the second is for good.
			if _, err := os.Stat(p.base + ".pack"); err == nil {
				p.unmergeable.Store(true)
			}
			continue
		}
		total += size
		count += p.n
		took = append(took, p)
		for _, o := range more {
			if !have[o.sha] {
				have[o.sha] = true
				objs = append(objs, o)
			}
		}
	}
	return objs, took
}

// maxMergeBytes bounds the objects, inflated, of a pack merged here.
const maxMergeBytes = 64 << 20

// plain reports whether the pack has no file beside its index and itself
// (and perhaps git's reverse index) that says to keep it as it is: a
// .keep, a partial clone's .promisor, a cruft pack's .mtimes, a .bitmap.
func (p *packIndex) plain() bool {
	for _, ext := range []string{".keep", ".promisor", ".mtimes", ".bitmap"} {
		if _, err := os.Lstat(p.base + ext); !os.IsNotExist(err) {
			return false
		}
	}
	return true
}

// objects reads every object of the pack, each whole and checked against
// its name; ok is false when one cannot be. The pack (a small one) is
// read whole, and one zlib reader inflates every object.
func (p *packIndex) objects() ([]storedObject, bool) {
	data, err := os.ReadFile(p.base + ".pack")
	if err != nil || int64(len(data)) != p.size {
		return nil, false
	}
	out := make([]storedObject, 0, p.n)
	var in inflater
	for i := range p.n {
		off, ok := p.offset(i)
		if !ok || off >= int64(len(data)) {
			return nil, false
		}
		typ, size, used, ok := packObjectHeader(data[off:])
		if !ok {
			return nil, false
		}
		z, ok := in.at(data[off+int64(used):])
		if !ok {
			return nil, false
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(z, body); err != nil {
			return nil, false
		}
		if n, err := z.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			return nil, false
		}
		o := newStored(typ, body)
		if o.sha != hex.EncodeToString(p.name(i)) {
			return nil, false
		}
		out = append(out, o)
	}
	return out, true
}

// wholeSize is the size of the pack's objects inflated, as their headers
// give it; ok is false when one is not a whole object read here.
func (p *packIndex) wholeSize() (int, bool) {
	f, err := os.Open(p.base + ".pack")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	total := 0
	for i := range p.n {
		off, ok := p.offset(i)
		if !ok {
			return 0, false
		}
		var head [16]byte
		n, _ := f.ReadAt(head[:], off)
		_, size, _, ok := packObjectHeader(head[:n])
		if !ok {
			p.unmergeable.Store(true)
			return 0, false
		}
		total += size
	}
	return total, true
}

// preciousObjects reports whether the config (git config --list -z) sets
// extensions.preciousObjects, with any value: git repack then deletes no
// pack, and neither does mergeSmall.
func preciousObjects(list string) bool {
	for _, kv := range strings.Split(list, "\x00") {
		k, _, _ := strings.Cut(kv, "\n")
		if strings.EqualFold(k, "extensions.preciousobjects") {
			return true
		}
	}
	return false
}
