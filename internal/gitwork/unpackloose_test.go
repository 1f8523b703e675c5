package gitwork

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// storedNames lists the objects the repository in dir holds, loose or
// packed, as git reads them: a pack written here must read back in git.
func storedNames(t testing.TB, dir string) []string {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch-all-objects: %v", err)
	}
	names := strings.Fields(string(out))
	slices.Sort(names)
	return slices.Compact(names)
}

// gitUnpack runs git unpack-objects --strict on pack in dir.
func gitUnpack(dir string, pack []byte) error {
	cmd := exec.Command("git", "unpack-objects", "-q", "--strict")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(pack)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// receiver is a repository at a new directory holding basis of src and
// its history as loose objects.
func receiver(t *testing.T, src, basis string) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "", "init", "-q")
	gitIn(t, src, "", "branch", "-f", "basis", basis)
	gitIn(t, dir, "", "-c", "fetch.unpackLimit=100000", "fetch", "-q", src, "basis")
	return dir
}

// TestUnpackLooseAsGit makes histories of random changes and sends the
// commits between random pairs in packs made by packLoose and by git
// pack-objects, with and without deltas: each is unpacked here and by git
// unpack-objects --strict into two repositories holding the basis, and
// both hold the same objects, git fsck --strict finding nothing wrong.
// Packs of deltas, symlinks and objects not loose are git's.
func TestUnpackLooseAsGit(t *testing.T) {
	ctx := context.Background()
	taken := map[string]int{}
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 9))
			src := t.TempDir()
			gitIn(t, src, "", "init", "-q", "-b", "main")
			paths := []string{"a", "b.txt", "d/x", "d/y", "d/e/z", "f/g/h", "same1", "same2"}
			if err := os.WriteFile(filepath.Join(src, ".gitignore"), []byte("*.o\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var commits []string
			for i := 0; i < 8; i++ {
				for n := 1 + rnd.IntN(4); n > 0; n-- {
					p := paths[rnd.IntN(len(paths))]
					mutate(t, src, p, rnd)
					if fi, err := os.Lstat(filepath.Join(src, p)); err == nil && fi.Mode()&fs.ModeSymlink != 0 && seed%2 == 0 {
						// Half the histories keep no symlink.
						_ = os.Remove(filepath.Join(src, p))
					}
				}
				// A big file changed a little: pack-objects makes a delta.
				big := strings.Repeat(fmt.Sprintf("line %d\n", i%2), 2000) + fmt.Sprint(i)
				if err := os.WriteFile(filepath.Join(src, "big"), []byte(big), 0o644); err != nil {
					t.Fatal(err)
				}
				gitIn(t, src, "", "add", "-A")
				gitIn(t, src, "", "commit", "-q", "--allow-empty", "-m", fmt.Sprint("c", i))
				commits = append(commits, gitIn(t, src, "", "rev-parse", "HEAD"))
			}
			s := &Repo{Root: src}
			for k := 0; k < 4; k++ {
				i := rnd.IntN(len(commits) - 1)
				j := i + 1 + rnd.IntN(len(commits)-1-i)
				basis, tip := commits[i], commits[j]
				loose, ok := s.packLoose(ctx, tip, basis)
				if !ok {
					t.Fatalf("commits %d..%d not packed", i, j)
				}
				revs := tip + "\n^" + basis + "\n"
				packs := map[string][]byte{
					"packLoose": loose,
					"whole":     []byte(gitIn(t, src, revs, "-c", "core.bigFileThreshold=1g", "pack-objects", "--stdout", "--revs", "-q", "--window=0", "--no-reuse-delta")),
					"deltas":    []byte(gitIn(t, src, revs, "pack-objects", "--stdout", "--revs", "-q", "--delta-base-offset", "--no-reuse-delta")),
				}
				for name, pack := range packs {
					// gitIn trims the output: pack-objects' is bytes.
					if name != "packLoose" {
						pack = rawPack(t, src, revs, name == "whole")
					}
					here, there := receiver(t, src, basis), receiver(t, src, basis)
					r := &Repo{Root: here}
					if r.unpackLoose(ctx, pack) {
						taken[name]++
						if hasDelta(t, src, pack) {
							t.Fatalf("%s %d..%d: a pack of deltas was unpacked without git", name, i, j)
						}
					} else if err := gitUnpack(here, pack); err != nil {
						t.Fatalf("%s %d..%d: git refused it: %v", name, i, j, err)
					}
					if err := gitUnpack(there, pack); err != nil {
						t.Fatalf("%s %d..%d: %v", name, i, j, err)
					}
					if a, b := storedNames(t, here), storedNames(t, there); !slices.Equal(a, b) {
						t.Fatalf("%s %d..%d: %d objects here, %d by git", name, i, j, len(a), len(b))
					}
					gitIn(t, here, "", "update-ref", "refs/heads/tip", tip)
					gitIn(t, here, "", "fsck", "--strict", "--no-dangling")
					if a, b := gitIn(t, here, "", "ls-tree", "-r", tip), gitIn(t, src, "", "ls-tree", "-r", tip); a != b {
						t.Fatalf("%s %d..%d: the receiver's tree differs", name, i, j)
					}
				}
			}
		})
	}
	t.Logf("unpacked without git: %v", taken)
	if taken["packLoose"] == 0 || taken["whole"] == 0 {
		t.Fatalf("no pack of whole objects was unpacked without git: %v", taken)
	}
}

// hasDelta reports whether pack holds a delta, as git verify-pack says.
func hasDelta(t *testing.T, dir string, pack []byte) bool {
	t.Helper()
	file := filepath.Join(t.TempDir(), "p.pack")
	if err := os.WriteFile(file, pack, 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "", "index-pack", file)
	for _, line := range strings.Split(gitIn(t, dir, "", "verify-pack", "-v", strings.TrimSuffix(file, ".pack")+".idx"), "\n") {
		if f := strings.Fields(line); len(f) == 7 && len(f[0]) == 40 {
			return true
		}
	}
	return false
}

// rawPack is git pack-objects' pack of revs, whole objects or deltas.
func rawPack(t *testing.T, dir, revs string, whole bool) []byte {
	t.Helper()
	args := []string{"pack-objects", "--stdout", "--revs", "-q", "--no-reuse-delta"}
	if whole {
		args = append(args, "--window=0")
	} else {
		args = append(args, "--delta-base-offset")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(revs)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rawObject is an object to put in a pack as it is, size its declared
// size (-1: its length).
type rawObject struct {
	typ  byte
	body string
	size int
}

// makePack is the pack of objs, count its declared count (-1: theirs),
// its checksum right.
func makePack(objs []rawObject, count int) []byte {
	if count < 0 {
		count = len(objs)
	}
	var b bytes.Buffer
	b.WriteString("PACK")
	_ = binary.Write(&b, binary.BigEndian, uint32(2))
	_ = binary.Write(&b, binary.BigEndian, uint32(count))
	for _, o := range objs {
		size := o.size
		if size < 0 {
			size = len(o.body)
		}
		c := o.typ<<4 | byte(size&0x0f)
		size >>= 4
		for size > 0 {
			b.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		b.WriteByte(c)
		z, _ := zlib.NewWriterLevel(&b, zlib.BestSpeed)
		_, _ = z.Write([]byte(o.body))
		_ = z.Close()
	}
	return withSum(b.Bytes())
}

// withSum is pack with its trailing SHA-1 over what precedes it.
func withSum(pack []byte) []byte {
	sum := sha1.Sum(pack)
	return append(slices.Clip(pack), sum[:]...)
}

// objName is the name git gives an object.
func objName(typ, body string) string {
	sum := sha1.Sum([]byte(typ + " " + strconv.Itoa(len(body)) + "\x00" + body))
	return hex.EncodeToString(sum[:])
}

// rawTree is a tree's body of entries (mode, name, name of the object)
// in the order given.
func rawTree(entries ...[3]string) string {
	var b strings.Builder
	for _, e := range entries {
		raw, _ := hex.DecodeString(e[2])
		b.WriteString(e[0] + " " + e[1] + "\x00" + string(raw))
	}
	return b.String()
}

const (
	testAuthor    = "author A U Thor <a@example.com> 1700000000 +0000\n"
	testCommitter = "committer C O Mitter <c@example.com> 1700000000 +0100\n"
)

// hostileBase is a repository of one commit, loose, and its commit and
// the name of its one blob.
func hostileBase(t testing.TB) (dir, base, blob string) {
	t.Helper()
	dir = t.TempDir()
	gitIn(t, dir, "", "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "", "add", ".")
	gitIn(t, dir, "", "commit", "-q", "-m", "base")
	return dir, gitIn(t, dir, "", "rev-parse", "HEAD"), gitIn(t, dir, "", "rev-parse", "HEAD:a.txt")
}

// TestUnpackLooseRefusesHostile feeds what a hostile peer might send: a
// good pack is taken without git, and each flaw of it is left to git,
// which refuses it, so that the bundle fails and nothing names what came.
func TestUnpackLooseRefusesHostile(t *testing.T) {
	ctx := context.Background()
	// Each repository is a copy of one, so that all hold the same base.
	tmpl, base, baseBlob := hostileBase(t)
	blob := "new\n"
	blobSHA := objName("blob", blob)
	goodTree := rawTree([3]string{"100644", "a.txt", baseBlob}, [3]string{"100644", "b.txt", blobSHA})
	commit := func(tree, head string) string {
		return "tree " + objName("tree", tree) + "\nparent " + base + "\n" + head + "\nmsg\n"
	}
	good := func(tree, head string) []rawObject {
		return []rawObject{{3, blob, -1}, {2, tree, -1}, {1, commit(tree, head), -1}}
	}
	goodObjs := good(goodTree, testAuthor+testCommitter)
	goodPack := makePack(goodObjs, -1)
	tip := objName("commit", commit(goodTree, testAuthor+testCommitter))

	dir := copyRepo(t, tmpl)
	r := &Repo{Root: dir}
	if !r.unpackLoose(ctx, goodPack) {
		t.Fatal("a good pack was left to git")
	}
	gitIn(t, dir, "", "update-ref", "refs/heads/tip", tip)
	gitIn(t, dir, "", "fsck", "--strict", "--no-dangling")

	// What git takes but this does not is left to git: bytes after the
	// checksum (git ignores them), modes git's fsck only mentions (its
	// BAD_FILEMODE is an info, not an error, even with --strict).
	for name, pack := range map[string][]byte{
		"bytes after the checksum": append(slices.Clone(goodPack), 0),
		"mode 100600":              makePack(good(rawTree([3]string{"100600", "a.txt", baseBlob}, [3]string{"100644", "b.txt", blobSHA}), testAuthor+testCommitter), -1),
		"mode 100645":              makePack(good(rawTree([3]string{"100645", "a.txt", baseBlob}, [3]string{"100644", "b.txt", blobSHA}), testAuthor+testCommitter), -1),
		"mode 100664":              makePack(good(rawTree([3]string{"100664", "a.txt", baseBlob}, [3]string{"100644", "b.txt", blobSHA}), testAuthor+testCommitter), -1),
	} {
		if r := (&Repo{Root: copyRepo(t, tmpl)}); r.unpackLoose(ctx, pack) {
			t.Fatalf("%s: taken without git", name)
		}
	}

	flipped := slices.Clone(goodPack)
	flipped[len(flipped)/2] ^= 0x10
	truncated := makePack(goodObjs, -1)
	truncated = withSum(slices.Delete(truncated[:len(truncated)-20], 20, 24)) // into the blob's stream
	cases := map[string][]byte{
		"flipped byte":     flipped,
		"count one more":   makePack(goodObjs, 4),
		"count one less":   makePack(goodObjs, 2),
		"truncated":        truncated,
		"past its size":    makePack([]rawObject{{3, blob, 2}, goodObjs[1], goodObjs[2]}, -1),
		"short of size":    makePack([]rawObject{{3, blob, 9}, goodObjs[1], goodObjs[2]}, -1),
		"no checksum":      goodPack[:len(goodPack)-20],
		".git":             makePack(good(rawTree([3]string{"100644", ".git", blobSHA}, [3]string{"100644", "a.txt", baseBlob}), testAuthor+testCommitter), -1),
		".GIT":             makePack(good(rawTree([3]string{"100644", ".GIT", blobSHA}, [3]string{"100644", "a.txt", baseBlob}), testAuthor+testCommitter), -1),
		"..":               makePack(good(rawTree([3]string{"100644", "..", blobSHA}, [3]string{"100644", "a.txt", baseBlob}), testAuthor+testCommitter), -1),
		"unsorted":         makePack(good(rawTree([3]string{"100644", "b.txt", blobSHA}, [3]string{"100644", "a.txt", baseBlob}), testAuthor+testCommitter), -1),
		"duplicate":        makePack(good(rawTree([3]string{"100644", "a.txt", baseBlob}, [3]string{"100644", "a.txt", blobSHA}), testAuthor+testCommitter), -1),
		"zero-padded mode": makePack(good(rawTree([3]string{"0100644", "a.txt", baseBlob}, [3]string{"100644", "b.txt", blobSHA}), testAuthor+testCommitter), -1),
		"no author":        makePack(good(goodTree, testCommitter), -1),
		"bad author":       makePack(good(goodTree, "author A U Thor a@example.com> 1700000000 +0000\n"+testCommitter), -1),
		"missing blob":     makePack(good(rawTree([3]string{"100644", "a.txt", baseBlob}, [3]string{"100644", "c.txt", objName("blob", "absent\n")}), testAuthor+testCommitter), -1),
		"blob as tree":     makePack(good(rawTree([3]string{"100644", "a.txt", baseBlob}, [3]string{"40000", "d", blobSHA}), testAuthor+testCommitter), -1),
		"file and directory of one name": func() []byte {
			sub := rawTree([3]string{"100644", "x", blobSHA})
			root := rawTree([3]string{"100644", "a", blobSHA}, [3]string{"100644", "a.txt", baseBlob}, [3]string{"40000", "a", objName("tree", sub)})
			return makePack(append([]rawObject{{2, sub, -1}}, good(root, testAuthor+testCommitter)...), -1)
		}(),
		"tree as blob": makePack([]rawObject{{3, blob, -1}, {2, rawTree([3]string{"100644", "x", blobSHA}), -1},
			{2, rawTree([3]string{"100644", "a.txt", baseBlob}, [3]string{"100644", "t", objName("tree", rawTree([3]string{"100644", "x", blobSHA}))}), -1}}, -1),
	}
	for name, pack := range cases {
		t.Run(name, func(t *testing.T) {
			dir := copyRepo(t, tmpl)
			r := &Repo{Root: dir}
			before := storedNames(t, dir)
			if r.unpackLoose(ctx, pack) {
				t.Fatal("taken without git")
			}
			if after := storedNames(t, dir); !slices.Equal(before, after) {
				t.Fatalf("a refused pack wrote %d objects", len(after)-len(before))
			}
			// The flaw is one git refuses too.
			if err := gitUnpack(copyRepo(t, tmpl), pack); err == nil {
				t.Fatal("git unpack-objects --strict takes it")
			}
			bundle := "# v2 git bundle\n-" + base + " base\n" + tip + " " + bundleRefs + tip + "\n\n" + string(pack)
			if _, err := r.UnpackBundle(ctx, []byte(bundle)); err == nil {
				t.Fatal("the bundle was taken")
			}
			if _, err := r.RevParse(ctx, tip); err == nil && strings.HasPrefix(name, "count") {
				t.Fatal("the commit of a refused bundle is in the repository")
			}
		})
	}
}

// FuzzUnpackLoose feeds packs to the unpacking without git, and to git
// unpack-objects --strict whenever it took one: it never takes what git
// refuses, and writes the objects git writes. The input is a pack whose
// checksum is made right (mode 0), one taken as it is (mode 1), or a list
// of objects (a type byte, two bytes of length, the body) packed whole
// (mode 2), so that the checks of trees and commits are reached.
func FuzzUnpackLoose(f *testing.F) {
	ctx := context.Background()
	tmpl, base, baseBlob := hostileBase(f)
	baseTree := gitIn(f, tmpl, "", "rev-parse", "HEAD^{tree}")
	blob := "new\n"
	tree := rawTree([3]string{"100644", "a.txt", baseBlob}, [3]string{"100644", "b.txt", objName("blob", blob)})
	sub := rawTree([3]string{"40000", "d", baseTree}, [3]string{"100755", "x", baseBlob})
	objs := []rawObject{
		{3, blob, -1}, {2, tree, -1},
		{1, "tree " + objName("tree", tree) + "\nparent " + base + "\n" + testAuthor + testCommitter + "\nmsg\n", -1},
		{2, sub, -1},
		{1, "tree " + objName("tree", sub) + "\n" + testAuthor + testCommitter + "\n", -1},
	}
	pack := makePack(objs, -1)
	f.Add(pack[:len(pack)-20], uint8(0))
	f.Add(pack, uint8(1))
	var list []byte
	for _, o := range objs {
		list = append(list, o.typ, byte(len(o.body)>>8), byte(len(o.body)))
		list = append(list, o.body...)
	}
	f.Add(list, uint8(2))
	f.Add(list[:len(list)-len(objs[4].body)-3], uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		var pack []byte
		switch mode % 3 {
		case 0:
			pack = withSum(data)
		case 1:
			pack = data
		case 2:
			var objs []rawObject
			for len(data) >= 3 {
				n := min(int(data[1])<<8|int(data[2]), len(data)-3)
				objs = append(objs, rawObject{data[0], string(data[3 : 3+n]), -1})
				data = data[3+n:]
			}
			pack = makePack(objs, -1)
		}
		if _, ok := readPack(pack); !ok {
			return
		}
		here, there := copyRepo(t, tmpl), copyRepo(t, tmpl)
		r := &Repo{Root: here, common: filepath.Join(here, ".git"), config: &configRead{ok: true}}
		if !r.unpackLoose(ctx, pack) {
			return
		}
		if err := gitUnpack(there, pack); err != nil {
			t.Fatalf("taken without git, refused by git: %v", err)
		}
		if a, b := storedNames(t, here), storedNames(t, there); !slices.Equal(a, b) {
			t.Fatalf("%d objects written here, %d by git", len(a), len(b))
		}
	})
}

// copyRepo is a copy of the repository at dir.
func copyRepo(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	if err := os.CopyFS(to, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	to, err := filepath.EvalSymlinks(to)
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// TestUnpackBundleWithoutGit brings a task's commit back as
// Bundle sends it, and a base's new commits over what a worker holds:
// neither starts a git process; a bundle of deltas still goes to git.
func TestUnpackBundleWithoutGit(t *testing.T) {
	ctx := context.Background()
	src, base, _ := hostileBase(t)
	coord := &Repo{Root: src}
	wdir := receiver(t, src, base)
	for i, files := range []map[string]string{{"b.txt": "b\n", "d/c.txt": "c\n"}, {"d/c.txt": "c2\n"}} {
		for name, body := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(wdir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wdir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitIn(t, wdir, "", "add", "-A")
		gitIn(t, wdir, "", "commit", "-q", "-m", fmt.Sprint("task ", i))
	}
	worker := &Repo{Root: wdir}
	tip := gitIn(t, wdir, "", "rev-parse", "HEAD")
	var b bytes.Buffer
	if err := worker.Bundle(ctx, &b, tip, base); err != nil {
		t.Fatal(err)
	}
	// What is asked once per Repo is asked before counting.
	if _, err := coord.commonDir(ctx); err != nil || !coord.unpackPlain(ctx) {
		t.Fatalf("the repository's config is not plain: %v", err)
	}
	log := gitLog(t)
	got, err := coord.UnpackBundle(ctx, b.Bytes())
	if err != nil || got != tip {
		t.Fatalf("UnpackBundle = %s, %v; want %s", got, err, tip)
	}
	if calls := ran(t, log); len(calls) > 0 {
		t.Fatalf("unpacking a task's commits ran git %v, want none", calls)
	}
	gitIn(t, src, "", "update-ref", "refs/heads/tip", tip)
	gitIn(t, src, "", "fsck", "--strict", "--no-dangling")

	// A pack of deltas is git's.
	big := strings.Repeat("a line of a big file\n", 500)
	for i := range 2 {
		if err := os.WriteFile(filepath.Join(wdir, "big"), []byte(big+fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, wdir, "", "add", "-A")
		gitIn(t, wdir, "", "commit", "-q", "-m", fmt.Sprint("big ", i))
	}
	next := gitIn(t, wdir, "", "rev-parse", "HEAD")
	pack := rawPack(t, wdir, next+"\n^"+tip+"\n", false)
	if !hasDelta(t, wdir, pack) {
		t.Fatal("git pack-objects made no delta")
	}
	bundle := "# v2 git bundle\n-" + tip + " basis\n" + next + " " + bundleRefs + next + "\n\n" + string(pack)
	_ = ran(t, log)
	if got, err := coord.UnpackBundle(ctx, []byte(bundle)); err != nil || got != next {
		t.Fatalf("UnpackBundle(deltas) = %s, %v; want %s", got, err, next)
	}
	if calls := ran(t, log); !slices.Contains(calls, "unpack-objects") {
		t.Fatalf("a pack of deltas was unpacked by %v, want git unpack-objects", calls)
	}
}

// BenchmarkUnpackBundle unpacks a task's commit as Bundle sends it, into
// a repository holding its base: without git (loose) and by git
// unpack-objects --strict (git), as before.
func BenchmarkUnpackBundle(b *testing.B) {
	ctx := context.Background()
	src, base, _ := hostileBase(b)
	wdir := b.TempDir()
	gitIn(b, wdir, "", "init", "-q")
	gitIn(b, src, "", "branch", "-f", "basis", base)
	gitIn(b, wdir, "", "-c", "fetch.unpackLimit=100000", "fetch", "-q", src, "basis")
	if err := os.WriteFile(filepath.Join(wdir, "out.txt"), []byte("task\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	gitIn(b, wdir, "", "add", "-A")
	gitIn(b, wdir, "", "commit", "-q", "-m", "task")
	tip := gitIn(b, wdir, "", "rev-parse", "HEAD")
	var buf bytes.Buffer
	if err := (&Repo{Root: wdir}).Bundle(ctx, &buf, tip, base); err != nil {
		b.Fatal(err)
	}
	_, pack, _ := bundleHead(buf.Bytes())
	for _, way := range []string{"loose", "git"} {
		b.Run(way, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
					b.Fatal(err)
				}
				r := &Repo{Root: dir, common: filepath.Join(dir, ".git"), config: &configRead{ok: true}}
				b.StartTimer()
				if way == "loose" {
					if !r.unpackLoose(ctx, pack) {
						b.Fatal("left to git")
					}
				} else if err := gitUnpack(dir, pack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestUnpackLooseFreshensWhatItHas: objects that came before (a delivery
// refused then) lie old and unreferenced; delivered again, they are made
// new (written again, in a new pack), as git's unpack makes them, so
// that a prune between the unpack and the move of the ref that names them
// does not delete them.
func TestUnpackLooseFreshensWhatItHas(t *testing.T) {
	ctx := context.Background()
	dir, base, baseBlob := hostileBase(t)
	blob := "new\n"
	blobSHA := objName("blob", blob)
	tree := rawTree([3]string{"100644", "a.txt", baseBlob}, [3]string{"100644", "b.txt", blobSHA})
	commit := "tree " + objName("tree", tree) + "\nparent " + base + "\n" + testAuthor + testCommitter + "\nmsg\n"
	pack := makePack([]rawObject{{3, blob, -1}, {2, tree, -1}, {1, commit, -1}}, -1)
	if err := gitUnpack(dir, pack); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	names := []string{blobSHA, objName("tree", tree), objName("commit", commit)}
	for _, s := range names {
		if err := os.Chtimes(filepath.Join(dir, ".git", "objects", s[:2], s[2:]), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if !(&Repo{Root: dir}).unpackLoose(ctx, pack) {
		t.Fatal("a pack of whole objects was left to git")
	}
	gitIn(t, dir, "", "prune", "--expire=2.weeks.ago")
	for _, s := range names {
		// In a fresh pack or a fresh loose file: either way git holds it.
		cmd := exec.Command("git", "cat-file", "-e", s)
		cmd.Dir = dir
		if err := cmd.Run(); err != nil {
			t.Errorf("object %s delivered again was pruned: %v", s, err)
		}
	}
	gitIn(t, dir, "", "update-ref", "refs/heads/tip", objName("commit", commit))
}
