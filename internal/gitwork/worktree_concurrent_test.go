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
