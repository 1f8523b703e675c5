package gitwork

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
)

// A bundle's pack is most often a few commits a run made itself over a
// basis the receiver holds: a task's commit over its base, a base's new
// landings over what a worker fetched last. Their objects are whole, loose
// or in small packs (written so here, by git commit, or by git
// unpack-objects), and the pack of them is written here rather than by
// git pack-objects, which a
// coordinator and its workers would start for every task. The pack holds
// each object whole: for every commit from the tip back to the basis, the
// commit, and every tree and blob of its tree that its parent's tree does
// not hold at the same path. That is every object reachable from the tip
// and not from the basis (an object not at its path in a parent was
// either new in that commit, or is at that path in every commit back to
// the basis, and so the receiver's), and perhaps a few it holds already,
// which git takes as it takes any object it has. Anything else (a merge
// commit, an object stored as a delta, a long history, a SHA-256
// repository) says
// "cannot tell", and git packs it.

// Bounds of a pack written here: more is git's to pack.
const (
	maxPackChain   = 64
	maxPackObjects = 4096
	maxPackBytes   = 32 << 20
	maxPackWalks   = 4 * maxPackObjects
)

// packObject is one object of a pack being written.
type packObject struct {
	typ  string
	body []byte
}

// loosePacker gathers the objects of a pack of loose objects.
type loosePacker struct {
	r       *Repo
	ctx     context.Context
	seen    map[string]bool       // objects in the pack
	walked  map[string]bool       // "tree old" pairs walked (addTree)
	trees   map[string]parsedTree // trees read
	objects []packObject
	size    int
}

// packLoose writes the pack of the commits from tip back to basis (not
// included), which must be a line of one-parent commits; ok is false when
// it cannot, and git is to pack them.
func (r *Repo) packLoose(ctx context.Context, tip, basis string) (pack []byte, ok bool) {
	if len(tip) != 2*sha1.Size || len(basis) != 2*sha1.Size {
		return nil, false
	}
	p := &loosePacker{r: r, ctx: ctx, seen: map[string]bool{}, walked: map[string]bool{}, trees: map[string]parsedTree{}}
	cur := tip
	for range maxPackChain {
		typ, body, ok := r.looseObject(ctx, cur)
		if !ok || typ != "commit" {
			return nil, false
		}
		c := parseCommit(string(body))
		if len(c.parents) != 1 || !isHex(c.tree) || !isHex(c.parents[0]) {
			return nil, false
		}
		parentTree := ""
		if typ, pbody, ok := r.looseObject(ctx, c.parents[0]); ok && typ == "commit" {
			parentTree = parseCommit(string(pbody)).tree
		}
		if !isHex(parentTree) || !p.add(cur, "commit", body) || !p.addTree(c.tree, parentTree) {
			return nil, false
		}
		if c.parents[0] == basis {
			return p.write(), true
		}
		cur = c.parents[0]
	}
	return nil, false
}

// add takes object sha in; false when the pack would grow past its bounds.
func (p *loosePacker) add(sha, typ string, body []byte) bool {
	if p.seen[sha] {
		return true
	}
	p.seen[sha] = true
	p.size += len(body)
	if len(p.objects) >= maxPackObjects || p.size > maxPackBytes {
		return false
	}
	p.objects = append(p.objects, packObject{typ: typ, body: body})
	return true
}

// addTree takes in tree and what of it old (the same path's tree in the
// parent, "" for none) does not hold. A tree met again under another old
// tree is walked again: what it holds that this old tree does not may be
// objects no other place brought in (two directories of the same tree
// swapped, say), so only the same pair is walked once.
func (p *loosePacker) addTree(tree, old string) bool {
	pair := tree + " " + old
	if tree == old || p.walked[pair] {
		return true
	}
	p.walked[pair] = true
	if len(p.walked) > maxPackWalks {
		return false
	}
	entries, body, ok := p.tree(tree)
	if !ok || !p.add(tree, "tree", body) {
		return false
	}
	was := map[string]treeEntry{}
	if old != "" {
		oldEntries, _, ok := p.tree(old)
		if !ok {
			return false
		}
		for _, e := range oldEntries {
			was[e.name] = e
		}
	}
	for _, e := range entries {
		o, had := was[e.name]
		switch {
		case had && o.sha == e.sha, e.mode == "160000":
			// The parent holds it there; a submodule's commit is no
			// object of this repository.
		case e.isTree():
			prev := ""
			if had && o.isTree() {
				prev = o.sha
			}
			if !p.addTree(e.sha, prev) {
				return false
			}
		case p.seen[e.sha]:
		default:
			typ, body, ok := p.r.looseObjectMax(p.ctx, e.sha, maxLooseObject)
			if !ok || typ != "blob" || !p.add(e.sha, "blob", body) {
				return false
			}
		}
	}
	return true
}

// tree is the entries and body of tree sha, read from its loose file once.
func (p *loosePacker) tree(sha string) ([]treeEntry, []byte, bool) {
	if t, ok := p.trees[sha]; ok {
		return t.entries, t.body, true
	}
	entries, body, ok := p.r.looseTree(p.ctx, sha)
	if !ok {
		return nil, nil, false
	}
	p.trees[sha] = parsedTree{entries: entries, body: body}
	return entries, body, true
}

// parsedTree is a tree read once for a pack.
type parsedTree struct {
	entries []treeEntry
	body    []byte
}

// packTypes are the pack's codes of the object types.
var packTypes = map[string]byte{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

// write is the pack (version 2) of the objects, each whole.
func (p *loosePacker) write() []byte {
	var b bytes.Buffer
	b.WriteString("PACK")
	_ = binary.Write(&b, binary.BigEndian, uint32(2))
	_ = binary.Write(&b, binary.BigEndian, uint32(len(p.objects)))
	z := p.r.deflater(&b)
	defer p.r.deflaters.Put(z)
	for _, o := range p.objects {
		writePackHeader(&b, packTypes[o.typ], len(o.body))
		z.Reset(&b)
		_, _ = z.Write(o.body)
		_ = z.Close()
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}
