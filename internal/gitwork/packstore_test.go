package gitwork

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// packRepo is a new repository with one commit, its Repo, and the commit.
func packRepo(t *testing.T) (string, *Repo, string) {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "", "init", "-q", "-b", "main")
	gitIn(t, dir, "", "config", "user.name", "Pack Er")
	gitIn(t, dir, "", "config", "user.email", "pack@example.com")
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := commitAll(t, dir, "a")
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, r, head
}

// packFiles lists the packs' indexes in the repository in dir.
func packFiles(t *testing.T, dir string) []string {
	t.Helper()
	idx, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// someObjects is a commit over head, its tree and n blobs.
func someObjects(t *testing.T, head string, n int, salt string) []storedObject {
	t.Helper()
	var objs []storedObject
	var tree []treeEntry
	for i := range n {
		b := newStored("blob", []byte(fmt.Sprintf("%s blob %d\n%s", salt, i, strings.Repeat("x", i*37))))
		objs = append(objs, b)
		tree = append(tree, treeEntry{mode: "100644", name: fmt.Sprintf("f%03d", i), sha: b.sha})
	}
	body, err := encodeTree(tree)
	if err != nil {
		t.Fatal(err)
	}
	tr := newStored("tree", body)
	c := newStored("commit", []byte("tree "+tr.sha+"\nparent "+head+"\nauthor A <a@x> 1700000000 +0000\ncommitter A <a@x> 1700000000 +0000\n\n"+salt+"\n"))
	return append(objs, tr, c)
}

// TestWriteObjectsAsGitReadsThem writes a commit, its tree and blobs as
// one pack: git verifies it, reads each object as written, and fsck finds
// the history whole; each reads back here too, and writing them again
// writes nothing.
func TestWriteObjectsAsGitReadsThem(t *testing.T) {
	ctx := context.Background()
	dir, r, head := packRepo(t)
	objs := someObjects(t, head, 40, "one")
	if err := r.writeObjects(ctx, objs); err != nil {
		t.Fatal(err)
	}
	packs := packFiles(t, dir)
	if len(packs) != 1 {
		t.Fatalf("%d packs written, want 1", len(packs))
	}
	gitIn(t, dir, "", "verify-pack", packs[0])
	for _, o := range objs {
		if got := gitIn(t, dir, "", "cat-file", "-t", o.sha); got != o.typ {
			t.Fatalf("git reads %s as a %s, written as a %s", short(o.sha), got, o.typ)
		}
		if o.typ == "blob" {
			if got := gitIn(t, dir, "", "cat-file", "blob", o.sha); got != strings.TrimSpace(string(o.body)) {
				t.Fatalf("git reads blob %s as %q", short(o.sha), got)
			}
		}
		// A new Repo reads the pack from its files.
		typ, body, ok := (&Repo{Root: dir}).looseObjectMax(ctx, o.sha, maxLooseObject)
		if !ok || typ != o.typ || string(body) != string(o.body) {
			t.Fatalf("object %s does not read back here: %v %s", short(o.sha), ok, typ)
		}
	}
	commit := objs[len(objs)-1].sha
	gitIn(t, dir, "", "update-ref", "refs/heads/main", commit)
	if out := gitIn(t, dir, "", "fsck", "--strict", "--no-dangling"); out != "" {
		t.Fatalf("git fsck: %s", out)
	}
	if err := r.writeObjects(ctx, objs); err != nil {
		t.Fatal(err)
	}
	if again := packFiles(t, dir); !slices.Equal(again, packs) {
		t.Fatalf("writing what is there wrote %v", again)
	}
	if _, _, ok := r.looseObjectMax(ctx, "0123456789012345678901234567890123456789", maxLooseObject); ok {
		t.Fatal("an object no one wrote read as there")
	}
}

// TestPackedDeltasAreGits reads each object of a pack git wrote with
// deltas: an object stored whole reads as git reads it, a delta says
// "cannot tell" (the callers then ask git).
func TestPackedDeltasAreGits(t *testing.T) {
	ctx := context.Background()
	dir, _, _ := packRepo(t)
	for i := range 4 {
		body := strings.Repeat("a line that stays the same in every version\n", 200) + fmt.Sprint(i)
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		commitAll(t, dir, fmt.Sprint(i))
	}
	gitIn(t, dir, "", "gc", "-q", "--aggressive")
	whole, delta := 0, 0
	r := &Repo{Root: dir}
	for _, line := range strings.Split(gitIn(t, dir, "", "verify-pack", "-v", packOf(t, dir)), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || len(f[0]) != 40 {
			continue
		}
		typ, body, ok := r.looseObjectMax(ctx, f[0], maxLooseObject)
		if len(f) == 7 {
			delta++
			if ok {
				t.Fatalf("delta %s read here", short(f[0]))
			}
			continue
		}
		whole++
		if !ok || typ != f[1] {
			t.Fatalf("whole %s %s not read here: %v %s", f[1], short(f[0]), ok, typ)
		}
		if got := gitIn(t, dir, "", "cat-file", typ, f[0]); got != strings.TrimSpace(string(body)) {
			t.Fatalf("%s %s reads otherwise here", typ, short(f[0]))
		}
	}
	if whole == 0 || delta == 0 {
		t.Fatalf("%d whole objects, %d deltas: the pack tests nothing", whole, delta)
	}
}

// TestBrokenPackNotRead flips a byte of a pack written here, then of its
// index: nothing reads from it as an object it is not.
func TestBrokenPackNotRead(t *testing.T) {
	ctx := context.Background()
	dir, r, head := packRepo(t)
	objs := someObjects(t, head, 6, "broken")
	if err := r.writeObjects(ctx, objs); err != nil {
		t.Fatal(err)
	}
	idx := packFiles(t, dir)[0]
	pack := strings.TrimSuffix(idx, ".idx") + ".pack"
	flip := func(path string, at int) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if at < 0 {
			at += len(data)
		}
		data[at] ^= 0x55
		_ = os.Chmod(path, 0o644)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The commit's deflated bytes (the last object): inflating them fails
	// or gives another body, whose name is not the one asked.
	flip(pack, -30)
	last := objs[len(objs)-1]
	if _, _, ok := (&Repo{Root: dir}).looseObjectMax(ctx, last.sha, maxLooseObject); ok {
		t.Fatal("an object read from a broken pack")
	}
	flip(pack, -30)
	if _, _, ok := (&Repo{Root: dir}).looseObjectMax(ctx, last.sha, maxLooseObject); !ok {
		t.Fatal("the mended pack does not read")
	}
	flip(idx, 8+1024+3)
	if _, _, ok := (&Repo{Root: dir}).looseObjectMax(ctx, last.sha, maxLooseObject); ok {
		t.Fatal("an object read through a broken index")
	}
}

// TestSmallPacksMerged writes one pack more than maxSmallPacks, and one
// git is told to keep: the next
// pack written takes in their objects and they go, but for one git was
// told to keep; git reads every object after, and so does a Repo that
// knew the packs gone.
func TestSmallPacksMerged(t *testing.T) {
	ctx := context.Background()
	dir, r, head := packRepo(t)
	var all []storedObject
	for i := range maxSmallPacks + 2 {
		objs := someObjects(t, head, 2, fmt.Sprint("pack ", i))
		if err := r.writeObjects(ctx, objs); err != nil {
			t.Fatal(err)
		}
		all = append(all, objs...)
		if i == 0 {
			kept := strings.TrimSuffix(packFiles(t, dir)[0], ".idx") + ".keep"
			if err := os.WriteFile(kept, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := &Repo{Root: dir}
	if _, _, ok := old.looseObjectMax(ctx, all[0].sha, maxLooseObject); !ok {
		t.Fatal("an object of the first pack does not read")
	}
	if n := len(packFiles(t, dir)); n != maxSmallPacks+2 {
		t.Fatalf("%d packs before the merge, want %d", n, maxSmallPacks+2)
	}
	last := someObjects(t, head, 2, "last")
	if err := r.writeObjects(ctx, last); err != nil {
		t.Fatal(err)
	}
	all = append(all, last...)
	if n := len(packFiles(t, dir)); n != 2 {
		t.Fatalf("%d packs after the merge, want 2 (the kept one and the merged one)", n)
	}
	have := storedNames(t, dir)
	for _, o := range all {
		if _, ok := slices.BinarySearch(have, o.sha); !ok {
			t.Fatalf("object %s lost in the merge", short(o.sha))
		}
		if typ, _, ok := old.looseObjectMax(ctx, o.sha, maxLooseObject); !ok || typ != o.typ {
			t.Fatalf("object %s does not read here after the merge", short(o.sha))
		}
	}
	for _, p := range packFiles(t, dir) {
		gitIn(t, dir, "", "verify-pack", p)
	}
}

// TestPacksReadAfterGitRepack reads objects from packs written here,
// then again once git repack has replaced them with its own.
func TestPacksReadAfterGitRepack(t *testing.T) {
	ctx := context.Background()
	dir, r, head := packRepo(t)
	objs := someObjects(t, head, 5, "repack")
	if err := r.writeObjects(ctx, objs); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "", "update-ref", "refs/heads/main", objs[len(objs)-1].sha)
	if _, _, ok := r.looseObjectMax(ctx, objs[0].sha, maxLooseObject); !ok {
		t.Fatal("not read before the repack")
	}
	gitIn(t, dir, "", "repack", "-q", "-a", "-d", "--window=0")
	for _, o := range objs {
		if typ, _, ok := r.looseObjectMax(ctx, o.sha, maxLooseObject); !ok || typ != o.typ {
			t.Fatalf("object %s not read after git repack", short(o.sha))
		}
	}
}

// TestMergeBoundedByIndex has more objects in small packs than one index
// read here may hold: the merge takes what fits, every write succeeds,
// and every pack written stays one read here.
func TestMergeBoundedByIndex(t *testing.T) {
	ctx := context.Background()
	dir, r, head := packRepo(t)
	for i := range maxSmallPacks + 1 {
		var objs []storedObject
		for k := range 1200 {
			objs = append(objs, newStored("blob", []byte(fmt.Sprint("t", i, ".", k))))
		}
		if err := r.writeObjects(ctx, objs); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if err := r.writeObjects(ctx, someObjects(t, head, 2, fmt.Sprint("x", i))); err != nil {
			t.Fatalf("write %d after the small packs: %v", i, err)
		}
	}
	packs := packFiles(t, dir)
	if len(packs) > maxSmallPacks+1 {
		t.Fatalf("%d packs: the small ones were not merged", len(packs))
	}
	for _, idx := range packs {
		if loadIndex(strings.TrimSuffix(idx, ".idx")) == nil {
			t.Fatalf("%s is not read here", filepath.Base(idx))
		}
	}
	if n := len(storedNames(t, dir)); n < (maxSmallPacks+1)*1200 {
		t.Fatalf("git reads %d objects, fewer than were written", n)
	}
}

// TestMergeLeavesLargeObjectsAlone: a small pack whose objects inflate
// past the merge's bound (a few large, alike blobs) is not merged, and is
// never inflated to find that out.
func TestMergeLeavesLargeObjectsAlone(t *testing.T) {
	ctx := context.Background()
	dir, r, head := packRepo(t)
	var objs []storedObject
	for i := range maxMergeBytes/maxLooseObject + 1 {
		b := make([]byte, maxLooseObject-1)
		b[0] = byte(i)
		objs = append(objs, newStored("blob", b))
	}
	pack, _ := r.encodePack(objs)
	if len(pack) > smallPack {
		t.Fatalf("the pack of large blobs is %d bytes, not a small one", len(pack))
	}
	gitIn(t, dir, string(pack), "index-pack", "--stdin", "--strict")
	objs, pack = nil, nil
	for i := range maxSmallPacks {
		if err := r.writeObjects(ctx, someObjects(t, head, 2, fmt.Sprint("p", i))); err != nil {
			t.Fatal(err)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	for i := range 3 {
		if err := r.writeObjects(ctx, someObjects(t, head, 2, fmt.Sprint("q", i))); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&ms)
	// The large blobs inflate to 72 MiB; the merge of the small packs
	// itself allocates a few MiB (more under the race detector).
	t.Logf("three writes allocated %d KiB", (ms.TotalAlloc-before)>>10)
	if got := ms.TotalAlloc - before; got > 4*maxLooseObject {
		t.Fatalf("three writes allocated %d MiB: the large blobs were inflated", got>>20)
	}
	if n := len(packFiles(t, dir)); n != 4 {
		t.Fatalf("%d packs, want 4: the large blobs', the merged one, the two written after", n)
	}
}

// TestPreciousObjectsKeepPacks: where extensions.preciousObjects is set,
// git repack deletes no pack, and no merge here does either.
func TestPreciousObjectsKeepPacks(t *testing.T) {
	ctx := context.Background()
	dir, _, head := packRepo(t)
	gitIn(t, dir, "", "config", "core.repositoryformatversion", "1")
	gitIn(t, dir, "", "config", "extensions.preciousObjects", "true")
	r := &Repo{Root: dir}
	for i := range maxSmallPacks + 3 {
		if err := r.writeObjects(ctx, someObjects(t, head, 2, fmt.Sprint("p", i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(packFiles(t, dir)); n != maxSmallPacks+3 {
		t.Fatalf("%d packs of %d written: packs of precious objects were removed", n, maxSmallPacks+3)
	}
}

// TestCruftPackNotFreshened: an object in a cruft pack expires by the time
// the pack's .mtimes gives it, not the pack's own: written again, it is
// written (as git writes it), and outlives the cruft pack's expiry.
func TestCruftPackNotFreshened(t *testing.T) {
	ctx := context.Background()
	dir, _, _ := packRepo(t)
	body := "cruft body\n"
	sha := gitIn(t, dir, body, "hash-object", "-w", "--stdin")
	old := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, ".git", "objects", sha[:2], sha[2:]), old, old); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", dir, "repack", "--cruft", "-d", "-q").CombinedOutput(); err != nil {
		t.Skipf("this git has no cruft packs: %v %s", err, out)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.mtimes")); len(m) == 0 {
		t.Fatal("git wrote no cruft pack")
	}
	if _, err := (&Repo{Root: dir}).writeLoose(ctx, "blob", []byte(body)); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "", "repack", "--cruft", "-d", "-q", "--cruft-expiration=1.week.ago")
	if err := exec.Command("git", "-C", dir, "cat-file", "-e", sha).Run(); err != nil {
		t.Fatalf("the object written again expired with the cruft pack: %v", err)
	}
}

// FuzzPackIndex reads a made-up index and pack, their checksums right and
// everything else as given: nothing panics, and no object reads past the
// bound it is read with.
func FuzzPackIndex(f *testing.F) {
	f.Add([]byte{1, 2, 3}, []byte("abcdefgh"), []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x03\x31\x78\x9c"))
	f.Add([]byte{0xff, 0, 7}, []byte{0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0}, []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\x95\x0a\x78\x9c\x01"))
	f.Fuzz(func(t *testing.T, fan, body, pack []byte) {
		idx := []byte(idxHeader)
		n := uint32(0)
		for i := range 256 {
			if i < len(fan) {
				n += uint32(fan[i] % 4)
			}
			idx = binary.BigEndian.AppendUint32(idx, n)
		}
		rest := make([]byte, int(n)*28)
		copy(rest, body)
		idx = append(idx, rest...)
		if len(pack) >= 12 {
			copy(pack, "PACK\x00\x00\x00\x02")
			binary.BigEndian.PutUint32(pack[8:], n)
		}
		psum := sha1.Sum(pack)
		pack = append(pack, psum[:]...)
		idx = append(idx, psum[:]...)
		isum := sha1.Sum(idx)
		idx = append(idx, isum[:]...)
		base := filepath.Join(t.TempDir(), "pack-x")
		if err := os.WriteFile(base+".idx", idx, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base+".pack", pack, 0o644); err != nil {
			t.Fatal(err)
		}
		p := loadIndex(base)
		if p == nil {
			return
		}
		for i := range p.n {
			off, ok := p.find(p.name(i))
			if !ok {
				continue
			}
			if _, body, ok := p.read(off, 64); ok && len(body) > 64 {
				t.Fatalf("an object of %d bytes read past the bound of 64", len(body))
			}
		}
		p.wholeSize()
		p.objects()
	})
}
