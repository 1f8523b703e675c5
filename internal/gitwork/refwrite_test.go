package gitwork

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refRepo is a repository on main with two commits, and a second
// repository made alike, where git update-ref makes each move writeRef
// makes, to compare with.
func refRepo(t *testing.T) (r *Repo, one, two string) {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "", "init", "-q", "-b", "main")
	gitIn(t, dir, "", "config", "user.name", "Ref Mover")
	gitIn(t, dir, "", "config", "user.email", "ref@example.com")
	gitIn(t, dir, "", "commit", "-q", "--allow-empty", "-m", "one")
	one = gitIn(t, dir, "", "rev-parse", "HEAD")
	gitIn(t, dir, "", "commit", "-q", "--allow-empty", "-m", "two")
	two = gitIn(t, dir, "", "rev-parse", "HEAD")
	return &Repo{Root: dir}, one, two
}

// reflogOf is ref's reflog, each line's old and new ids, the name of who
// moved it and its message (not the time, which differs).
func reflogOf(t *testing.T, dir, ref string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "logs", filepath.FromSlash(ref)))
	if err != nil {
		t.Fatalf("reflog of %s: %v", ref, err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		head, msg, _ := strings.Cut(line, "\t")
		who := head[:strings.LastIndexByte(head, '>')+1]
		out = append(out, who+"\t"+msg)
	}
	return out
}

// TestWriteRefAsGit: a branch made, moved from where it is and moved
// from a given commit here holds what git update-ref makes it hold, with
// the same reflog lines, no lock left, and git reads it.
func TestWriteRefAsGit(t *testing.T) {
	ctx := context.Background()
	r, one, two := refRepo(t)
	moves := []struct {
		new, old string
		cas      bool
	}{
		{one, "", true},  // made, where none was
		{two, "", false}, // from wherever it is
		{one, two, true}, // from two only
	}
	for _, m := range moves {
		if !r.writeRef(ctx, "", "weave: test", "refs/heads/weave/plan-a", m.new, m.old, m.cas) {
			t.Fatalf("move to %s from %q (cas %v) was left to git", m.new, m.old, m.cas)
		}
		args := []string{"update-ref", "-m", "weave: test", "refs/heads/weave/plan-b", m.new}
		if m.cas {
			args = append(args, m.old)
		}
		// As the Repo runs git: the environment's own identity, none of
		// the test's.
		if _, err := run(ctx, r.Root, nil, args...); err != nil {
			t.Fatal(err)
		}
	}
	if got := gitIn(t, r.Root, "", "rev-parse", "weave/plan-a"); got != one {
		t.Fatalf("branch at %s, want %s", got, one)
	}
	got, want := reflogOf(t, r.Root, "refs/heads/weave/plan-a"), reflogOf(t, r.Root, "refs/heads/weave/plan-b")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reflog written here:\n%s\ngit's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(r.Root, ".git", "refs", "heads", "weave", "plan-a.lock")); err == nil {
		t.Fatal("the lock was left behind")
	}
	gitIn(t, r.Root, "", "fsck", "--strict")
	// The main worktree's HEAD is on main: moving main logs HEAD too, as
	// git does.
	if !r.writeRef(ctx, "", "weave: test", "refs/heads/main", one, two, true) {
		t.Fatal("moving main was left to git")
	}
	if h := gitIn(t, r.Root, "", "reflog", "-1", "--format=%H %gs", "HEAD"); h != one+" weave: test" {
		t.Fatalf("HEAD's reflog: %q", h)
	}
}

// TestWriteRefLeavesToGit: every move git would make otherwise, or
// refuse, is not made here: nothing moves, and moveRef then gets git's
// answer.
func TestWriteRefLeavesToGit(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(t *testing.T, r *Repo, one, two string) (ref, new, old string, cas bool){
		"a packed branch": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			gitIn(t, r.Root, "", "branch", "packed", one)
			gitIn(t, r.Root, "", "pack-refs", "--all")
			return "refs/heads/packed", two, "", false
		},
		"a file where a directory would go": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			gitIn(t, r.Root, "", "branch", "weave", one)
			return "refs/heads/weave/x", two, "", true
		},
		"a packed file where a directory would go": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			gitIn(t, r.Root, "", "branch", "weave", one)
			gitIn(t, r.Root, "", "pack-refs", "--all")
			return "refs/heads/weave/x", two, "", true
		},
		"a lock held": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			writeFile(t, filepath.Join(r.Root, ".git", "refs", "heads", "main.lock"), "")
			return "refs/heads/main", one, two, true
		},
		"another old value": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			return "refs/heads/main", two, one, true
		},
		"made where one is": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			return "refs/heads/main", one, "", true
		},
		"no reflog asked": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			gitIn(t, r.Root, "", "config", "core.logAllRefUpdates", "false")
			return "refs/heads/main", one, two, true
		},
		"a name git reads otherwise": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			return "refs/heads/a..b", one, "", false
		},
		"a lock's name": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			return "refs/heads/x.lock", one, "", false
		},
		"outside the branches": func(t *testing.T, r *Repo, one, two string) (string, string, string, bool) {
			return "HEAD", one, "", false
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			r, one, two := refRepo(t)
			ref, new, old, cas := setup(t, r, one, two)
			before := gitIn(t, r.Root, "", "for-each-ref", "--format=%(refname) %(objectname)")
			if r.writeRef(ctx, "", "weave: test", ref, new, old, cas) {
				t.Fatalf("moved %s here", ref)
			}
			if after := gitIn(t, r.Root, "", "for-each-ref", "--format=%(refname) %(objectname)"); after != before {
				t.Fatalf("refs changed though nothing was to move:\n%s\n%s", before, after)
			}
		})
	}
	// Left to git, a packed branch still moves.
	r, one, two := refRepo(t)
	gitIn(t, r.Root, "", "branch", "packed", one)
	gitIn(t, r.Root, "", "pack-refs", "--all")
	if err := r.SetBranch(ctx, "packed", two); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := gitIn(t, r.Root, "", "rev-parse", "packed"); got != two {
		t.Fatalf("packed branch at %s, want %s", got, two)
	}
}
