package gitwork_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestWorktreesAddedAtOnce: a run's workers add their worktrees at once.
// git worktree add reads every worktree git records, and one being added
// beside it may be half written (its commondir made but still empty),
// which git reports as "failed to read .../commondir: Success". Every add
// must succeed however they interleave.
func TestWorktreesAddedAtOnce(t *testing.T) {
	r := repo(t)
	ctx := context.Background()
	base := strings.TrimSpace(git(t, r.Root, "rev-parse", "HEAD"))
	const rounds, width = 6, 8
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, width)
		for n := range width {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dir := filepath.Join(r.Root, ".weave", "worktrees", "p", fmt.Sprintf("r%d-w%d", round, n))
				if err := r.Worktree(ctx, dir, fmt.Sprintf("weave/p-r%d-w%d", round, n), base); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
	}
}

// TestFetchBesideWorktreesAdded: a worker fetches a task's base from a git
// remote while its other slots add their worktrees. git fetch checks what
// it got against the HEAD of every worktree, and one being added beside
// it ("bad object worktrees/<id>/HEAD") failed the fetch.
func TestFetchBesideWorktreesAdded(t *testing.T) {
	r := repo(t)
	ctx := context.Background()
	base := strings.TrimSpace(git(t, r.Root, "rev-parse", "HEAD"))
	bare := filepath.Join(t.TempDir(), "o.git")
	git(t, r.Root, "init", "-q", "--bare", bare)
	const adds, fetches = 24, 24
	// Commits only the remote has, so that each fetch brings objects and
	// walks the refs to check them.
	src := t.TempDir()
	git(t, src, "clone", "-q", bare, ".")
	git(t, src, "config", "user.name", "T")
	git(t, src, "config", "user.email", "t@example.com")
	for i := range fetches {
		write(t, src, fmt.Sprintf("f%d.txt", i), fmt.Sprint(i))
		git(t, src, "add", ".")
		git(t, src, "commit", "-q", "-m", fmt.Sprint(i))
		git(t, src, "push", "-q", bare, fmt.Sprintf("HEAD:refs/weave/base/%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, adds+fetches)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for n := range adds {
			dir := filepath.Join(r.Root, ".weave", "worktrees", "p", fmt.Sprintf("w%d", n))
			if err := r.Worktree(ctx, dir, fmt.Sprintf("weave/p-w%d", n), base); err != nil {
				errs <- err
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range fetches {
			if _, err := r.FetchRef(ctx, bare, fmt.Sprintf("refs/weave/base/%d", i), fmt.Sprintf("refs/weave/got/%d", i)); err != nil {
				errs <- err
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
