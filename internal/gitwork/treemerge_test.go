package gitwork

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// randomSide changes the working tree of dir at random: files modified,
// deleted, added, made executable or symlinks, files made directories and
// directories files, files and whole directories renamed.
func randomSide(t *testing.T, rnd *rand.Rand, dir string) {
	t.Helper()
	contents := []string{"one\n", "two\n", "a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nd\ne\nf\ng\nX\n", "shared\n"}
	names := []string{"x", "y", "z"}
	dirs := []string{"", "a", "b", "a/c"}
	list := func(wantDirs bool) []string {
		var out []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			if rel == ".git" {
				return filepath.SkipDir
			}
			if rel != "." && d.IsDir() == wantDirs {
				out = append(out, rel)
			}
			return nil
		})
		return out
	}
	pick := func(s []string) string { return s[rnd.Intn(len(s))] }
	write := func(p, body string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644)
		}
	}
	ops := 1 + rnd.Intn(3)
	for i := 0; i < ops; i++ {
		files, ds := list(false), list(true)
		switch rnd.Intn(9) {
		case 0, 1: // modify
			if len(files) > 0 {
				write(pick(files), pick(contents)+fmt.Sprint(rnd.Intn(3))+"\n")
			}
		case 2: // delete
			if len(files) > 0 {
				_ = os.Remove(filepath.Join(dir, pick(files)))
			}
		case 3: // add
			write(filepath.Join(pick(dirs), pick(names)+fmt.Sprint(rnd.Intn(2))), pick(contents))
		case 4: // mode
			if len(files) > 0 {
				p := filepath.Join(dir, pick(files))
				if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
					_ = os.Chmod(p, st.Mode().Perm()^0o111)
				}
			}
		case 5: // symlink
			if len(files) > 0 {
				p := filepath.Join(dir, pick(files))
				_ = os.Remove(p)
				_ = os.Symlink(pick(names), p)
			}
		case 6: // file to directory, directory to file
			if len(files) > 0 && rnd.Intn(2) == 0 {
				f := pick(files)
				_ = os.Remove(filepath.Join(dir, f))
				write(filepath.Join(f, pick(names)), pick(contents))
			} else if len(ds) > 0 {
				d := pick(ds)
				_ = os.RemoveAll(filepath.Join(dir, d))
				write(d, pick(contents))
			}
		case 7: // rename a file
			if len(files) > 0 {
				f := pick(files)
				to := filepath.Join(pick(dirs), pick(names)+"r")
				if _, err := os.Lstat(filepath.Join(dir, to)); err != nil {
					_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755)
					_ = os.Rename(filepath.Join(dir, f), filepath.Join(dir, to))
				}
			}
		case 8: // rename a whole directory
			if len(ds) > 0 {
				d := pick(ds)
				to := filepath.Join(filepath.Dir(d), "m"+fmt.Sprint(rnd.Intn(2)))
				if _, err := os.Lstat(filepath.Join(dir, to)); err != nil {
					_ = os.Rename(filepath.Join(dir, d), filepath.Join(dir, to))
				}
			}
		}
	}
}

// commitAll commits the whole working tree of dir and returns the commit.
func commitAll(t *testing.T, dir, msg string) string {
	t.Helper()
	gitIn(t, dir, "", "add", "-A")
	gitIn(t, dir, "", "commit", "-q", "--allow-empty", "--no-verify", "-m", msg)
	return gitIn(t, dir, "", "rev-parse", "HEAD")
}

// gitMergeTree is git merge-tree --write-tree's tree and whether it was
// clean.
func gitMergeTree(t *testing.T, dir, ours, theirs string) (string, bool) {
	t.Helper()
	cmd := exec.Command("git", "merge-tree", "--write-tree", "--no-messages", ours, theirs)
	cmd.Dir = dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
		t.Fatalf("git merge-tree: %v", err)
	}
	return strings.Fields(string(out))[0], err == nil
}

// TestFastMergeAsGit builds many repositories at random, a base and two
// sides changing it, and merges the sides here and with git merge-tree:
// whenever the merge here says clean, git says clean too and its tree is
// the same; whenever git says conflict, the merge here did not say clean.
func TestFastMergeAsGit(t *testing.T) {
	if testing.Short() {
		t.Skip("makes hundreds of repositories")
	}
	ctx := context.Background()
	const cases = 200
	var fast, gitClean, gitConflict int
	for seed := int64(1); seed <= cases; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		dir := t.TempDir()
		gitIn(t, dir, "", "init", "-q")
		for _, p := range []string{"x", "a/x", "a/y", "a/c/z", "b/y"} {
			if rnd.Intn(4) > 0 {
				_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
				_ = os.WriteFile(filepath.Join(dir, p), []byte([]string{"one\n", "shared\n", "a\nb\nc\nd\ne\nf\ng\nh\n"}[rnd.Intn(3)]), 0o644)
			}
		}
		_ = os.WriteFile(filepath.Join(dir, "keep"), []byte("k\n"), 0o644)
		base := commitAll(t, dir, "base")
		side := func(name string) string {
			gitIn(t, dir, "", "checkout", "-q", "-f", "-B", name, base)
			gitIn(t, dir, "", "clean", "-q", "-fdx")
			randomSide(t, rnd, dir)
			return commitAll(t, dir, name)
		}
		ours, theirs := side("ours"), side("theirs")
		r := &Repo{Root: dir}
		gtree, clean := gitMergeTree(t, dir, ours, theirs)
		ttree := gitIn(t, dir, "", "rev-parse", theirs+"^{tree}")
		tree, trees, ok := r.fastMerge(ctx, ours, theirs, base, ttree)
		if ok {
			if err := r.writeObjects(ctx, trees); err != nil {
				t.Fatalf("seed %d: write the merged trees: %v", seed, err)
			}
		}
		if clean {
			gitClean++
		} else {
			gitConflict++
		}
		if !ok {
			continue
		}
		fast++
		if !clean {
			t.Errorf("seed %d: git finds a conflict, the merge here says clean", seed)
			continue
		}
		if tree != gtree {
			t.Errorf("seed %d: merged tree %s, git's %s\n%s\n---\n%s", seed, short(tree), short(gtree),
				gitIn(t, dir, "", "ls-tree", "-r", tree), gitIn(t, dir, "", "ls-tree", "-r", gtree))
		}
		if out := gitIn(t, dir, "", "fsck", "--strict", "--no-dangling"); out != "" {
			t.Errorf("seed %d: git fsck: %s", seed, out)
		}
	}
	t.Logf("%d cases: git clean %d, conflict %d; merged here %d", cases, gitClean, gitConflict, fast)
	// The test means something only if both answers come often.
	if fast < cases/5 || gitClean-fast < cases/20 || gitConflict < cases/20 {
		t.Errorf("too few cases of a kind: %d merged here, %d clean by git, %d conflicts", fast, gitClean, gitConflict)
	}
}

// gitLog puts a git in front of PATH that logs each call's arguments, and
// returns the log's path.
func gitLog(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// ran reports the git subcommands logged (the first word after any -c).
func ran(t *testing.T, log string) []string {
	t.Helper()
	data, _ := os.ReadFile(log)
	_ = os.Remove(log)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		for len(f) > 1 && f[0] == "-c" {
			f = f[2:]
		}
		if len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

// landingRepo is a repository with a base, a head on it that added a
// file, and a task's commit on the base that added another.
func landingRepo(t *testing.T) (dir, base, head, task string) {
	t.Helper()
	dir = t.TempDir()
	gitIn(t, dir, "", "init", "-q", "-b", "main")
	gitIn(t, dir, "", "config", "user.name", "Land Er")
	gitIn(t, dir, "", "config", "user.email", "land@example.com")
	_ = os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "src", "a.go"), []byte("package a\n"), 0o644)
	base = commitAll(t, dir, "base")
	_ = os.WriteFile(filepath.Join(dir, "src", "b.go"), []byte("package a // b\n"), 0o644)
	head = commitAll(t, dir, "head")
	gitIn(t, dir, "", "checkout", "-q", "-b", "task", base)
	_ = os.WriteFile(filepath.Join(dir, "src", "c.go"), []byte("package a // c\n"), 0o644)
	gitIn(t, dir, "", "add", "-A")
	cmd := exec.Command("git", "commit", "-q", "-F", "-")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Task Author", "GIT_AUTHOR_EMAIL=task@example.com", "GIT_AUTHOR_DATE=1700000000 +0530")
	cmd.Stdin = strings.NewReader("Add c, café\n\nWeave-Task: 3\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	task = gitIn(t, dir, "", "rev-parse", "HEAD")
	gitIn(t, dir, "", "checkout", "-q", "main")
	return dir, base, head, task
}

var committerTime = regexp.MustCompile(`(?m)^(committer .*>) (\d+) ([-+]\d{4})$`)

// catCommit is commit's object as git reads it, byte for byte.
func catCommit(t *testing.T, dir, commit string) string {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "commit", commit)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file %s: %v", commit, err)
	}
	return string(out)
}

// TestLandWithoutGitAsCommitTree lands a task's commit on a head with no
// merge-tree and no commit-tree, in both modes and with messages and
// authors of many shapes: the commit is git's own (git commit-tree given
// the same makes the same object, but for the time), and git fsck
// --strict reads it without complaint.
func TestLandWithoutGitAsCommitTree(t *testing.T) {
	ctx := context.Background()
	type shape struct{ mode, msg, author string }
	shapes := []shape{{mode: LandRebase}, {mode: LandMerge}}
	for _, msg := range []string{"no newline", "", "a\n\n\n\nb\n\n\n", "  lead\ttab \n", "x\r\ny\n", "ü ☃ 𝄞\n\nWeave-Task: 1\n", "# not a comment\n"} {
		shapes = append(shapes, shape{LandRebase, msg, "Zoë O'Brien <zoe@example.com> 1600000000 -0800"})
	}
	for _, sh := range shapes {
		dir, base, head, task := landingRepo(t)
		if sh.author != "" {
			// A task's commit as it is, whatever git commit would have
			// cleaned from its message.
			cmd := exec.Command("git", "commit-tree", task+"^{tree}", "-p", base, "-F", "-")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), authorEnv(sh.author)...)
			cmd.Stdin = strings.NewReader(sh.msg)
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			task = strings.TrimSpace(string(out))
		}
		log := gitLog(t)
		r := &Repo{Root: dir}
		start := time.Now()
		landed, err := r.Land(ctx, head, task, sh.mode)
		if err != nil {
			t.Fatal(err)
		}
		calls := ran(t, log)
		if slices.Contains(calls, "merge-tree") || slices.Contains(calls, "commit-tree") {
			t.Fatalf("%s %q: landing ran git %v", sh.mode, sh.msg, calls)
		}
		gtree, _ := gitMergeTree(t, dir, head, task)
		if got := gitIn(t, dir, "", "rev-parse", landed+"^{tree}"); got != gtree {
			t.Fatalf("%s: landed tree %s, git's %s", sh.mode, got, gtree)
		}
		args := []string{"commit-tree", gtree, "-p", head}
		if sh.mode == LandMerge {
			args = append(args, "-p", task)
		}
		c, _ := r.readCommit(ctx, task)
		cmd := exec.Command("git", append(args, "-F", "-")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), authorEnv(c.author)...)
		cmd.Stdin = strings.NewReader(c.message)
		byGit, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		want := committerTime.ReplaceAllString(catCommit(t, dir, strings.TrimSpace(string(byGit))), "$1 T $3")
		got := catCommit(t, dir, landed)
		if committerTime.ReplaceAllString(got, "$1 T $3") != want {
			t.Fatalf("%s: landed commit\n%q\ngit commit-tree writes\n%q", sh.mode, got, want)
		}
		if m := committerTime.FindStringSubmatch(got); m == nil {
			t.Fatalf("%s: no committer line:\n%s", sh.mode, got)
		} else if secs, _ := strconv.ParseInt(m[2], 10, 64); secs < start.Unix() || secs > time.Now().Unix() {
			t.Fatalf("%s: committed at %d, not now:\n%s", sh.mode, secs, got)
		}
		gitIn(t, dir, "", "update-ref", "refs/heads/main", landed)
		if out := gitIn(t, dir, "", "fsck", "--strict", "--no-dangling"); out != "" {
			t.Fatalf("%s: git fsck: %s", sh.mode, out)
		}
	}
}

// TestLandFallsBackToGit lands where the merge or the commit cannot be
// made here surely (trees packed whole are merged here and land as
// git's); commit.gpgSign and i18n.commitEncoding make git write the
// commit.
func TestLandFallsBackToGit(t *testing.T) {
	ctx := context.Background()
	t.Run("packed", func(t *testing.T) {
		// Whole objects in git's pack are read here; deltas are git's
		// (TestPackedDeltasAreGits).
		dir, _, head, task := landingRepo(t)
		gitIn(t, dir, "", "repack", "-q", "-a", "-d", "--window=0")
		log := gitLog(t)
		landed, err := (&Repo{Root: dir}).Land(ctx, head, task, LandRebase)
		if err != nil {
			t.Fatal(err)
		}
		if calls := ran(t, log); slices.Contains(calls, "merge-tree") {
			t.Fatalf("trees packed whole merged by git: %v", calls)
		}
		gtree, _ := gitMergeTree(t, dir, head, task)
		if got := gitIn(t, dir, "", "rev-parse", landed+"^{tree}"); got != gtree {
			t.Fatalf("landed tree %s, git's %s", got, gtree)
		}
		gitIn(t, dir, "", "update-ref", "refs/heads/main", landed)
		if out := gitIn(t, dir, "", "fsck", "--strict", "--no-dangling"); out != "" {
			t.Fatalf("git fsck: %s", out)
		}
	})
	t.Run("no pack", func(t *testing.T) {
		// The pack of the merged trees and commit cannot be written (its
		// directory is a file): git merges and the landing goes on.
		dir, _, head, task := landingRepo(t)
		packs := filepath.Join(dir, ".git", "objects", "pack")
		if err := os.RemoveAll(packs); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(packs, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		log := gitLog(t)
		landed, err := (&Repo{Root: dir}).Land(ctx, head, task, LandRebase)
		if err != nil {
			t.Fatal(err)
		}
		if calls := ran(t, log); !slices.Contains(calls, "merge-tree") {
			t.Fatalf("a landing whose pack could not be written did not ask git: %v", calls)
		}
		if err := os.Remove(packs); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(packs, 0o755); err != nil {
			t.Fatal(err)
		}
		gtree, _ := gitMergeTree(t, dir, head, task)
		if got := gitIn(t, dir, "", "rev-parse", landed+"^{tree}"); got != gtree {
			t.Fatalf("landed tree %s, git's %s", got, gtree)
		}
	})
	t.Run("gpgsign", func(t *testing.T) {
		dir, _, head, task := landingRepo(t)
		gitIn(t, dir, "", "config", "commit.gpgSign", "true")
		gitIn(t, dir, "", "config", "gpg.program", "false")
		log := gitLog(t)
		_, err := (&Repo{Root: dir}).Land(ctx, head, task, LandRebase)
		if calls := ran(t, log); !slices.Contains(calls, "commit-tree") {
			t.Fatalf("a commit to sign written without git (err %v): %v", err, calls)
		}
	})
	t.Run("encoding", func(t *testing.T) {
		dir, _, head, task := landingRepo(t)
		gitIn(t, dir, "", "config", "i18n.commitEncoding", "ISO-8859-1")
		log := gitLog(t)
		landed, err := (&Repo{Root: dir}).Land(ctx, head, task, LandRebase)
		if err != nil {
			t.Fatal(err)
		}
		if calls := ran(t, log); !slices.Contains(calls, "commit-tree") || !slices.Contains(calls, "merge-tree") {
			t.Fatalf("want git's merge-tree and commit-tree: %v", calls)
		}
		if body := gitIn(t, dir, "", "cat-file", "commit", landed); !strings.Contains(body, "\nencoding ISO-8859-1\n") {
			t.Fatalf("landed commit without its encoding:\n%s", body)
		}
	})
	t.Run("no identity", func(t *testing.T) {
		// A repository whose user set no name: the committer is the
		// fallback identity, as git commit-tree is run then.
		home := t.TempDir()
		t.Setenv("HOME", home)
		t.Setenv("XDG_CONFIG_HOME", home)
		dir, _, head, task := landingRepo(t)
		gitIn(t, dir, "", "config", "--unset", "user.name")
		gitIn(t, dir, "", "config", "--unset", "user.email")
		r := &Repo{Root: dir}
		log := gitLog(t)
		landed, err := r.Land(ctx, head, task, LandRebase)
		if err != nil {
			t.Fatal(err)
		}
		if calls := ran(t, log); slices.Contains(calls, "commit-tree") {
			t.Fatalf("landing ran git %v", calls)
		}
		c, _ := r.readCommit(ctx, task)
		tree := gitIn(t, dir, "", "rev-parse", landed+"^{tree}")
		byGit, err := r.commitTreeAs(ctx, task, c.author, tree, c.message, head)
		if err != nil {
			t.Fatal(err)
		}
		got := committerTime.ReplaceAllString(gitIn(t, dir, "", "cat-file", "commit", landed), "$1 T $3")
		want := committerTime.ReplaceAllString(gitIn(t, dir, "", "cat-file", "commit", byGit), "$1 T $3")
		if got != want || !strings.Contains(got, "\ncommitter weave <weave@localhost> T ") {
			t.Fatalf("landed commit\n%s\ngit's\n%s", got, want)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		dir, base, _, task := landingRepo(t)
		gitIn(t, dir, "", "checkout", "-q", "-b", "other", base)
		_ = os.WriteFile(filepath.Join(dir, "src", "c.go"), []byte("package a // other c\n"), 0o644)
		other := commitAll(t, dir, "other")
		_, err := (&Repo{Root: dir}).Land(ctx, other, task, LandRebase)
		var ce *ConflictError
		if !errors.As(err, &ce) || strings.Join(ce.Files, ",") != "src/c.go" || ce.Commit != task || ce.Onto != other {
			t.Fatalf("want the conflict in src/c.go, got %v", err)
		}
	})
	t.Run("already landed", func(t *testing.T) {
		// A commit already on the line (merged before): git merges from
		// it, not from its parent, and so must the landing.
		dir, _, head, task := landingRepo(t)
		merged, err := (&Repo{Root: dir}).Land(ctx, head, task, LandMerge)
		if err != nil {
			t.Fatal(err)
		}
		gitIn(t, dir, "", "checkout", "-q", "-f", "--detach", merged)
		_ = os.Remove(filepath.Join(dir, "src", "c.go"))
		after := commitAll(t, dir, "drop c")
		log := gitLog(t)
		landed, err := (&Repo{Root: dir}).Land(ctx, after, task, LandMerge)
		if err != nil {
			t.Fatal(err)
		}
		if calls := ran(t, log); !slices.Contains(calls, "merge-tree") {
			t.Fatalf("a commit already landed merged without git: %v", calls)
		}
		gtree, _ := gitMergeTree(t, dir, after, task)
		if got := gitIn(t, dir, "", "rev-parse", landed+"^{tree}"); got != gtree {
			t.Fatalf("landed tree %s, git's %s", got, gtree)
		}
	})
}

// TestLandTasksOfOneBase lands, in each mode, tasks all made on one base
// onto a head that grows with each landing, as a run does when tasks run
// side by side: none needs git to merge, and each landed tree is git's.
func TestLandTasksOfOneBase(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{LandRebase, LandMerge} {
		dir, base, head, _ := landingRepo(t)
		var tasks []string
		for i := 0; i < 4; i++ {
			gitIn(t, dir, "", "checkout", "-q", "-f", "--detach", base)
			_ = os.WriteFile(filepath.Join(dir, "src", fmt.Sprintf("t%d.go", i)), []byte("package a\n"), 0o644)
			tasks = append(tasks, commitAll(t, dir, fmt.Sprintf("task %d", i)))
		}
		r := &Repo{Root: dir}
		log := gitLog(t)
		for _, task := range tasks {
			landed, err := r.Land(ctx, head, task, mode)
			if err != nil {
				t.Fatal(err)
			}
			if calls := ran(t, log); slices.Contains(calls, "merge-tree") || slices.Contains(calls, "commit-tree") {
				t.Fatalf("%s: landing ran git %v", mode, calls)
			}
			if gtree, _ := gitMergeTree(t, dir, head, task); gitIn(t, dir, "", "rev-parse", landed+"^{tree}") != gtree {
				t.Fatalf("%s: landed tree is not git's %s", mode, gtree)
			}
			ran(t, log) // the test's own git calls
			head = landed
		}
		if got := gitIn(t, dir, "", "ls-tree", "--name-only", head, "src/"); got != "src/a.go\nsrc/b.go\nsrc/t0.go\nsrc/t1.go\nsrc/t2.go\nsrc/t3.go" {
			t.Fatalf("%s: landed files %q", mode, got)
		}
	}
}

// TestIdentKeptAsGitWrites tells the author lines git writes again as
// they are from those it would rewrite (and git must then write).
func TestIdentKeptAsGitWrites(t *testing.T) {
	for line, want := range map[string]bool{
		"A U Thor <a@example.com> 1700000000 +0000": true,
		"Zoë O'Brien <z@x> 0 -0800":                 true,
		"A <a@b> 1700000000 +0530":                  true,
		"A. <a@b> 1700000000 +0000":                 false, // git strips crud at the end
		" A <a@b> 1700000000 +0000":                 false,
		"A <a@b.> 1700000000 +0000":                 false,
		"<a@b> 1700000000 +0000":                    false, // no name
		"A <> 1700000000 +0000":                     false,
		"A <a@b> 01700000000 +0000":                 false, // git reads it as another number
		"A <a@b> 1700000000 -0000":                  false, // git writes +0000
		"A <a@b> 1700000000 +0075":                  false, // git writes +0115
		"A <a@b> 1700000000 +000":                   false,
		"A <a@b> 1700000000":                        false,
		"A <a@b>  1700000000 +0000":                 false,
		"A <a@b> 1700000000 +0000 extra":            false,
		"A <a<b> 1700000000 +0000":                  false,
		"A <a@b> 99999999999999999999 +0000":        false,
	} {
		if _, got := identDate(line); got != want {
			t.Errorf("identDate(%q) = %v, want %v", line, got, want)
		}
	}
}
