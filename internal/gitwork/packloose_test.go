package gitwork

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackLooseHoldsWhatGitWouldSend makes histories of random changes
// (files added, changed, removed, made executable or links, turned into
// directories, contents moved to other paths and back) and packs, without
// git, the commits between random pairs: the pack holds every object git
// rev-list says is new over the basis, git takes it with --strict into a
// repository that holds only the basis, and that repository then holds
// the tip's whole tree.
func TestPackLooseHoldsWhatGitWouldSend(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			src := t.TempDir()
			gitIn(t, src, "", "init", "-q", "-b", "main")
			paths := []string{"a", "b.txt", "d/x", "d/y", "d/e/z", "f/g/h", "same1", "same2"}
			var commits []string
			for i := 0; i < 10; i++ {
				for n := 1 + rnd.IntN(4); n > 0; n-- {
					mutate(t, src, paths[rnd.IntN(len(paths))], rnd)
				}
				if rnd.IntN(3) == 0 {
					// Directories swapped: trees met again under other
					// parents' trees.
					swap(t, filepath.Join(src, "d"), filepath.Join(src, "f"))
				}
				gitIn(t, src, "", "add", "-A")
				gitIn(t, src, "", "commit", "-q", "--allow-empty", "-m", fmt.Sprint("c", i))
				commits = append(commits, gitIn(t, src, "", "rev-parse", "HEAD"))
			}
			r := &Repo{Root: src}
			for k := 0; k < 4; k++ {
				i := rnd.IntN(len(commits) - 1)
				j := i + 1 + rnd.IntN(len(commits)-1-i)
				basis, tip := commits[i], commits[j]
				pack, ok := r.packLoose(ctx, tip, basis)
				if !ok {
					t.Fatalf("commits %d..%d of loose objects not packed", i, j)
				}
				recv := t.TempDir()
				gitIn(t, recv, "", "init", "-q")
				gitIn(t, src, "", "branch", "-f", "basis", basis)
				gitIn(t, recv, "", "fetch", "-q", src, "basis")
				packFile := filepath.Join(t.TempDir(), "p.pack")
				if err := os.WriteFile(packFile, pack, 0o644); err != nil {
					t.Fatal(err)
				}
				gitIn(t, recv, "", "index-pack", "--strict", packFile)
				idx, err := os.ReadFile(strings.TrimSuffix(packFile, ".pack") + ".idx")
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, line := range strings.Split(gitIn(t, recv, string(idx), "show-index"), "\n") {
					got = append(got, strings.Fields(line)[1])
				}
				for _, line := range strings.Split(gitIn(t, src, "", "rev-list", "--objects", tip, "^"+basis), "\n") {
					if sha := strings.Fields(line)[0]; !slices.Contains(got, sha) {
						t.Fatalf("commits %d..%d: the pack lacks %s, which git would send", i, j, line)
					}
				}
				gitIn(t, recv, string(pack), "unpack-objects", "-q", "--strict")
				gitIn(t, recv, "", "update-ref", "refs/heads/tip", tip)
				gitIn(t, recv, "", "fsck", "--strict", "--no-dangling")
				if a, b := gitIn(t, recv, "", "ls-tree", "-r", tip), gitIn(t, src, "", "ls-tree", "-r", tip); a != b {
					t.Fatalf("commits %d..%d: the receiver's tree differs", i, j)
				}
			}
		})
	}
}

// swap exchanges what paths a and b hold, either of them missing.
func swap(t *testing.T, a, b string) {
	t.Helper()
	tmp := a + ".swap"
	for _, mv := range [][2]string{{a, tmp}, {b, a}, {tmp, b}} {
		if err := os.Rename(mv[0], mv[1]); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// TestPackLooseDirectoriesSwapped packs two directories made with a
// shared file, then swapped: each tree is met again under the other's
// parent tree, and the shared file must still be in the pack.
func TestPackLooseDirectoriesSwapped(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	gitIn(t, src, "", "init", "-q", "-b", "main")
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README", "r\n")
	gitIn(t, src, "", "add", "-A")
	gitIn(t, src, "", "commit", "-q", "-m", "basis")
	basis := gitIn(t, src, "", "rev-parse", "HEAD")
	write("a/__init__.py", "shared\n")
	write("a/y", "one\n")
	write("b/__init__.py", "shared\n")
	write("b/y", "two\n")
	gitIn(t, src, "", "add", "-A")
	gitIn(t, src, "", "commit", "-q", "-m", "two directories")
	swap(t, filepath.Join(src, "a"), filepath.Join(src, "b"))
	gitIn(t, src, "", "add", "-A")
	gitIn(t, src, "", "commit", "-q", "-m", "swapped")
	tip := gitIn(t, src, "", "rev-parse", "HEAD")
	r := &Repo{Root: src}
	if _, ok := r.packLoose(ctx, tip, basis); !ok {
		t.Fatal("loose commits not packed")
	}
	var b bytes.Buffer
	if err := r.Bundle(ctx, &b, tip, basis); err != nil {
		t.Fatal(err)
	}
	recv := t.TempDir()
	gitIn(t, recv, "", "init", "-q")
	gitIn(t, src, "", "branch", "-f", "basis", basis)
	gitIn(t, recv, "", "fetch", "-q", src, "basis")
	into, err := Open(ctx, recv)
	if err != nil {
		t.Fatal(err)
	}
	if sha, err := into.UnpackBundle(ctx, b.Bytes()); err != nil || sha != tip {
		t.Fatalf("UnpackBundle = %s, %v; want %s", sha, err, tip)
	}
	gitIn(t, recv, "", "update-ref", "refs/heads/tip", tip)
	gitIn(t, recv, "", "fsck", "--strict", "--no-dangling")
}

// mutate changes path in dir at random: written anew, removed, made
// executable, a link, a directory, or given the content of another path.
func mutate(t *testing.T, dir, path string, rnd *rand.Rand) {
	t.Helper()
	p := filepath.Join(dir, path)
	_ = os.RemoveAll(p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		// A parent is a file now: it goes.
		parent := filepath.Dir(p)
		for ; parent != dir; parent = filepath.Dir(parent) {
			if fi, err := os.Lstat(parent); err == nil && !fi.IsDir() {
				_ = os.Remove(parent)
			}
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	switch rnd.IntN(6) {
	case 0: // removed
	case 1:
		err = os.WriteFile(p, []byte(fmt.Sprintf("%s %d\n", path, rnd.IntN(3))), 0o755)
	case 2:
		err = os.Symlink("target", p)
	case 3:
		err = os.MkdirAll(filepath.Join(p, "in"), 0o755)
		if err == nil {
			err = os.WriteFile(filepath.Join(p, "in", "f"), []byte("in\n"), 0o644)
		}
	case 4:
		err = os.WriteFile(p, []byte("shared\n"), 0o644)
	default:
		err = os.WriteFile(p, []byte(fmt.Sprintf("%s %d\n", path, rnd.IntN(3))), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestPackLooseLeavesPackedToGit packs nothing itself once the objects
// are deltas in git's pack, and Bundle then has git pack them: the bundle
// still unpacks into a repository holding the basis.
func TestPackLooseLeavesPackedToGit(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	gitIn(t, src, "", "init", "-q", "-b", "main")
	var commits []string
	for i := 0; i < 3; i++ {
		// Large and alike: git gc stores all but one as deltas.
		body := strings.Repeat("a line that stays the same in every version\n", 200) + fmt.Sprint(i)
		if err := os.WriteFile(filepath.Join(src, "f"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, src, "", "add", "-A")
		gitIn(t, src, "", "commit", "-q", "-m", fmt.Sprint(i))
		commits = append(commits, gitIn(t, src, "", "rev-parse", "HEAD"))
	}
	r := &Repo{Root: src}
	if _, ok := r.packLoose(ctx, commits[2], commits[0]); !ok {
		t.Fatal("loose commits not packed")
	}
	if _, ok := r.packLoose(ctx, commits[2], "0123456789012345678901234567890123456789"); ok {
		t.Fatal("a pack over a basis not on the tip's line")
	}
	gitIn(t, src, "", "gc", "-q", "--aggressive")
	if deltas(t, src) == 0 {
		t.Fatal("git gc stored no delta")
	}
	r = &Repo{Root: src}
	if _, ok := r.packLoose(ctx, commits[2], commits[0]); ok {
		t.Fatal("deltas packed without git")
	}
	var b bytes.Buffer
	if err := r.Bundle(ctx, &b, commits[2], commits[0]); err != nil {
		t.Fatal(err)
	}
	recv := t.TempDir()
	gitIn(t, recv, "", "init", "-q")
	gitIn(t, src, "", "branch", "-f", "basis", commits[0])
	gitIn(t, recv, "", "fetch", "-q", src, "basis")
	into, err := Open(ctx, recv)
	if err != nil {
		t.Fatal(err)
	}
	if sha, err := into.UnpackBundle(ctx, b.Bytes()); err != nil || sha != commits[2] {
		t.Fatalf("UnpackBundle = %s, %v", sha, err)
	}
}

// packOf is the path of the one pack's index in the repository in dir.
func packOf(t *testing.T, dir string) string {
	t.Helper()
	idx, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	if err != nil || len(idx) != 1 {
		t.Fatalf("packs: %v %v", idx, err)
	}
	return idx[0]
}

// deltas counts the objects stored as deltas in the one pack of the
// repository in dir: git verify-pack -v gives each a depth and a base.
func deltas(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(gitIn(t, dir, "", "verify-pack", "-v", packOf(t, dir)), "\n") {
		if f := strings.Fields(line); len(f) == 7 && len(f[0]) == 40 {
			n++
		}
	}
	return n
}
