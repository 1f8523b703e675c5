package gitwork

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Settle makes the worktrees under dir, and the branches named
// refPrefix*, usable again after the run that owned them was killed: the
// lock files its git children left (index.lock, HEAD.lock, a branch's
// .lock) are removed, a worktree whose creation was cut off (git left it
// locked, "initializing") is removed, and what git no longer has is
// pruned. Only the holder of the project's lock may call it: then no other
// git of a run is at work there, and a lock file is a dead run's.
func (r *Repo) Settle(ctx context.Context, dir, refPrefix string) error {
	common, err := r.commonDir(ctx)
	if err != nil {
		return err
	}
	under, err := filepath.EvalSymlinks(dir)
	if err != nil {
		under = filepath.Clean(dir)
	}
	entries, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// git records its linked worktrees there and nowhere else: with none
	// recorded, a prune has nothing to forget.
	prune := len(entries) > 0
	for _, e := range entries {
		admin := filepath.Join(common, "worktrees", e.Name())
		b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			continue
		}
		wt := filepath.Dir(strings.TrimSpace(string(b)))
		if real, err := filepath.EvalSymlinks(wt); err == nil {
			wt = real
		}
		if !within(wt, under) {
			continue
		}
		for _, name := range []string{"index.lock", "HEAD.lock"} {
			_ = os.Remove(filepath.Join(admin, name))
		}
		if _, err := os.Stat(filepath.Join(admin, "locked")); err == nil {
			// Cut off while it was made: what is there is no checkout
			// to reuse.
			_ = os.Remove(filepath.Join(admin, "locked"))
			_ = os.RemoveAll(wt)
		}
	}
	if refPrefix != "" {
		heads := filepath.Join(common, "refs", "heads")
		_ = filepath.WalkDir(heads, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".lock") {
				return nil
			}
			if rel, err := filepath.Rel(heads, path); err == nil && strings.HasPrefix(filepath.ToSlash(rel), refPrefix) {
				_ = os.Remove(path)
			}
			return nil
		})
	}
	if !prune {
		return nil
	}
	return r.Prune(ctx)
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
