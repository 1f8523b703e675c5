package gitwork

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
)

// A landing merges a task's commit into the integration head. In the
// common case (tasks changing different files, on objects the run itself
// just wrote, loose) the merge is made here, without a git process; in any
// other case, and whenever this code cannot be sure, git merge-tree makes
// it, as before.
//
// Why a merge this code calls clean is exactly the tree git merge-tree
// --write-tree gives (git's ort merge):
//
//   - The base. git merges from the merge base of onto and commit. Commit
//     has one parent P, P is an ancestor of onto (LandWith checks it), and
//     commit is not (lineClear checks it, over loose commits): then the
//     common ancestors of onto and commit are exactly those of P, and P is
//     the one merge base. Replace refs, grafts and a shallow history would
//     make git see other parents or objects: with any of them, git merges.
//   - Per path. With no renames, ort resolves each path from its three
//     versions: all alike, or both sides alike (files), or one side like
//     the base, takes the other side's version (a deletion included);
//     anything else is a conflict or a content merge, which this code
//     leaves to git. A directory one side left as in the base is the other
//     side's tree, unchanged (ort's trivial directory resolution, which
//     holds when no rename source needs looking inside it); a directory
//     both sides changed is written from its merged entries, in git's
//     order, and left out when nothing is left in it.
//   - Renames. ort pairs, on each side, paths that side deleted with paths
//     it added, among the paths it looks at (directories both sides
//     changed: it does not look inside a directory one side left alone
//     unless a rename source needs it). A path both sides deleted, or one
//     deleted and the other changed, is a rename source whose pairing
//     changes the outcome: both are left to git here. Otherwise, when on
//     a side no deleted path and no added path were both seen, that side
//     has no rename at all, exact or not; and directory renames, which
//     ort infers only from file renames, cannot happen either (so neither
//     merge.directoryRenames nor merge.renames can change the result).
//     A side that did both is left to git.
//   - D/F. A path that is a file on one side and a directory on the
//     other, where both changed it, is left to git.
//
// The randomized test in treemerge_test.go compares this merge with git's
// over many repositories.

// maxLineWalk bounds the commits read to tell whether a task's commit is
// already on the integration branch.
const maxLineWalk = 256

// sideChanges is what one side of a merge did among the paths ort looks
// at: deleted a file (a rename source), added one (a rename target).
type sideChanges struct{ deleted, added bool }

// treeMerge merges trees in the object store; the trees it makes are kept
// until the merge is known clean.
type treeMerge struct {
	r            *Repo
	ctx          context.Context
	ours, theirs sideChanges
	made         map[string][]byte
}

// fastMerge merges commit (whose one parent is parent, an ancestor of
// onto) into onto as git merge-tree would, without git, and returns the
// merged tree and the trees made for it, for the caller to write with the
// commit; ok is false when it cannot be sure of git's answer (the caller
// asks git).
func (r *Repo) fastMerge(ctx context.Context, onto, commit, parent, commitTree string) (string, []storedObject, bool) {
	// The trees are written as the commit is: only where the config asks
	// for nothing more (landcommit.go).
	if len(commit) != 2*sha1.Size || !r.landSetup(ctx).plain || !r.plainHistory(ctx) {
		return "", nil, false
	}
	baseTree, ok := r.looseCommitTree(ctx, parent)
	if !ok {
		return "", nil, false
	}
	ontoTree, ok := r.looseCommitTree(ctx, onto)
	if !ok || !r.lineClear(ctx, onto, parent, commit) {
		return "", nil, false
	}
	m := &treeMerge{r: r, ctx: ctx, made: map[string][]byte{}}
	entries, ok := m.dir(baseTree, ontoTree, commitTree)
	if !ok || m.ours.deleted && m.ours.added || m.theirs.deleted && m.theirs.added {
		return "", nil, false
	}
	root, ok := m.tree(entries)
	if !ok {
		return "", nil, false
	}
	// Subtrees before the trees that name them, as git writes them.
	var trees []storedObject
	for _, sha := range m.order(root) {
		trees = append(trees, storedObject{sha: sha, typ: "tree", body: m.made[sha]})
	}
	return root, trees, true
}

// order lists the trees made under root (root last), each after the
// trees it names.
func (m *treeMerge) order(root string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(sha string)
	visit = func(sha string) {
		body, ok := m.made[sha]
		if !ok || seen[sha] {
			return
		}
		seen[sha] = true
		entries, _ := parseTree(body)
		for _, e := range entries {
			if e.isTree() {
				visit(e.sha)
			}
		}
		out = append(out, sha)
	}
	visit(root)
	return out
}

// tree names the tree of entries, kept to be written.
func (m *treeMerge) tree(entries []treeEntry) (string, bool) {
	body, err := encodeTree(entries)
	if err != nil {
		return "", false
	}
	sum := sha1.Sum(append([]byte("tree "+strconv.Itoa(len(body))+"\x00"), body...))
	sha := hex.EncodeToString(sum[:])
	m.made[sha] = body
	return sha, true
}

// entriesOf reads tree sha ("" for none) by name; ok is false when it is
// not a loose tree as git writes it, or holds a name twice (a file and a
// directory alike named).
func (m *treeMerge) entriesOf(sha string) (map[string]treeEntry, bool) {
	out := map[string]treeEntry{}
	if sha == "" {
		return out, true
	}
	entries, _, ok := m.r.looseTree(m.ctx, sha)
	if !ok {
		return nil, false
	}
	for _, e := range entries {
		if _, dup := out[e.name]; dup {
			return nil, false
		}
		out[e.name] = e
	}
	return out, true
}

// dir merges one directory of the three trees (each "" when absent) and
// returns the merged entries.
func (m *treeMerge) dir(base, ours, theirs string) ([]treeEntry, bool) {
	b, ok1 := m.entriesOf(base)
	o, ok2 := m.entriesOf(ours)
	t, ok3 := m.entriesOf(theirs)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	names := map[string]bool{}
	for _, set := range []map[string]treeEntry{b, o, t} {
		for n := range set {
			names[n] = true
		}
	}
	var out []treeEntry
	for n := range names {
		be, hb := b[n]
		oe, ho := o[n]
		te, ht := t[n]
		bp, op, tp := ptr(be, hb), ptr(oe, ho), ptr(te, ht)
		switch {
		case same(op, bp) && same(tp, bp):
			keep(&out, bp)
		case same(op, bp): // only theirs changed it
			noteChange(&m.theirs, bp, tp)
			keep(&out, tp)
		case same(tp, bp): // only ours changed it
			noteChange(&m.ours, bp, op)
			keep(&out, op)
		case op != nil && tp != nil && op.isTree() && tp.isTree() && (bp == nil || bp.isTree()):
			// Both changed a directory: merged entry by entry.
			var bsha string
			if bp != nil {
				bsha = bp.sha
			}
			sub, ok := m.dir(bsha, op.sha, tp.sha)
			if !ok {
				return nil, false
			}
			if len(sub) == 0 {
				continue // nothing left in it: ort leaves it out
			}
			sha, ok := m.tree(sub)
			if !ok {
				return nil, false
			}
			out = append(out, treeEntry{mode: "40000", name: n, sha: sha})
		case same(op, tp) && op != nil && !op.isTree() && (bp == nil || !bp.isTree()):
			// Both made it the same file.
			noteChange(&m.ours, bp, op)
			noteChange(&m.theirs, bp, tp)
			keep(&out, op)
		default:
			// Both deleted it, one deleted what the other changed, a
			// file against a directory, two changes to one file: git's.
			return nil, false
		}
	}
	return out, true
}

// noteChange records what one side did to a path: a file (or whatever a
// directory held) gone is a deletion, one that appeared an addition.
func noteChange(s *sideChanges, base, side *treeEntry) {
	switch {
	case base == nil && side != nil:
		s.added = true
	case base != nil && side == nil:
		s.deleted = true
	case base != nil && side != nil && base.isTree() != side.isTree():
		s.added, s.deleted = true, true
	}
}

func ptr(e treeEntry, ok bool) *treeEntry {
	if !ok {
		return nil
	}
	return &e
}

// same reports whether two versions of a path are alike (both absent, or
// the same mode and object).
func same(a, b *treeEntry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.mode == b.mode && a.sha == b.sha
}

func keep(out *[]treeEntry, e *treeEntry) {
	if e != nil {
		*out = append(*out, *e)
	}
}

// looseCommitTree is the tree of commit, read from its loose file.
func (r *Repo) looseCommitTree(ctx context.Context, commit string) (string, bool) {
	typ, body, ok := r.looseObject(ctx, commit)
	if !ok || typ != "commit" {
		return "", false
	}
	c := parseCommit(string(body))
	return c.tree, len(c.tree) == 2*sha1.Size
}

// lineClear reports whether commit is surely not onto nor one of its
// ancestors, parent being one: every commit from onto down its first
// parents to parent is read (loose), and every other parent of those
// commits (a task merged in) is checked alike, its own parents being
// found on that line or below parent on it. Anything not read says false.
func (r *Repo) lineClear(ctx context.Context, onto, parent, commit string) bool {
	above := map[string][]string{} // onto's line down to parent, parent excluded
	cur := onto
	for cur != parent {
		if cur == commit || len(above) >= maxLineWalk {
			return false
		}
		ps, ok := r.looseParents(ctx, cur)
		if !ok || len(ps) == 0 {
			return false
		}
		above[cur] = ps
		cur = ps[0]
	}
	var below map[string]bool // parent's line down its first parents, read when needed
	known := func(sha string) bool {
		if sha == parent || above[sha] != nil {
			return true
		}
		if below == nil {
			below = map[string]bool{}
			cur := parent
			for len(below) < maxLineWalk {
				ps, ok := r.looseParents(ctx, cur)
				if !ok || len(ps) == 0 {
					break
				}
				cur = ps[0]
				below[cur] = true
			}
		}
		return below[sha]
	}
	for _, ps := range above {
		for _, q := range ps[1:] {
			if q == commit {
				return false
			}
			if known(q) {
				continue
			}
			qps, ok := r.looseParents(ctx, q)
			if !ok {
				return false
			}
			for _, h := range qps {
				if h == commit || !known(h) {
					return false
				}
			}
		}
	}
	return true
}

// looseParents are the parents of commit, read from its loose file.
func (r *Repo) looseParents(ctx context.Context, commit string) ([]string, bool) {
	typ, body, ok := r.looseObject(ctx, commit)
	if !ok || typ != "commit" {
		return nil, false
	}
	return parseCommit(string(body)).parents, true
}

// plainHistory reports whether git sees the objects as stored: no replace
// refs, grafts or shallow history that would change the parents or
// objects git reads.
func (r *Repo) plainHistory(ctx context.Context) bool {
	common, err := r.commonDir(ctx)
	if err != nil {
		return false
	}
	for _, f := range []string{"shallow", filepath.Join("info", "grafts")} {
		if _, err := os.Lstat(filepath.Join(common, f)); !os.IsNotExist(err) {
			return false
		}
	}
	if ents, err := os.ReadDir(filepath.Join(common, "refs", "replace")); err == nil && len(ents) > 0 || err != nil && !os.IsNotExist(err) {
		return false
	}
	packed, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil && !os.IsNotExist(err) {
		return false
	}
	return !bytes.Contains(packed, []byte(" refs/replace/"))
}
