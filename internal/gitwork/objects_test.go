package gitwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git in dir and fails the test when it fails.
func gitIn(t testing.TB, dir string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestTreesAsGitWritesThem reads a tree git wrote, whose names sort
// differently as files and as directories, writes it again and gets the
// same object; an object written here is one git reads and names alike.
func TestTreesAsGitWritesThem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gitIn(t, dir, "", "init", "-q")
	for _, f := range []string{"a.txt", "a/x", "a-b", "ab", "b/c/d", "z"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "", "add", "-A")
	tree := gitIn(t, dir, "", "write-tree")
	r := &Repo{Root: dir}
	entries, _, ok := r.looseTree(ctx, tree)
	if !ok {
		t.Fatalf("tree %s not read from its file", tree)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.name)
	}
	if want := strings.Fields(gitIn(t, dir, "", "ls-tree", "--name-only", tree)); strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("entries %v, git lists %v", names, want)
	}
	// Written back in another order, the same tree.
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	body, err := encodeTree(entries)
	if err != nil {
		t.Fatal(err)
	}
	sha, err := r.writeLoose(ctx, "tree", body)
	if err != nil {
		t.Fatal(err)
	}
	if sha != tree {
		t.Fatalf("tree written again is %s, git's is %s", sha, tree)
	}
	// A new object: git finds it under the same name and reads it.
	sha, err = r.writeLoose(ctx, "blob", []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := gitIn(t, dir, "new\n", "hash-object", "--stdin"); sha != want {
		t.Fatalf("blob written as %s, git names it %s", sha, want)
	}
	if got := gitIn(t, dir, "", "cat-file", "-p", sha); got != "new" {
		t.Fatalf("git reads the blob as %q", got)
	}
	gitIn(t, dir, "", "fsck", "--strict", "--no-dangling")
	// A tree that is not as git writes it is not read.
	if _, ok := parseTree([]byte("100644 b\x00" + strings.Repeat("x", 20) + "100644 a\x00" + strings.Repeat("x", 20))); ok {
		t.Fatal("a tree out of order was read")
	}
	if _, ok := parseTree([]byte("644 a\x00" + strings.Repeat("x", 20))); ok {
		t.Fatal("a tree with a mode git does not write was read")
	}
}
