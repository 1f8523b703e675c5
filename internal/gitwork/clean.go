package gitwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A reused worktree is cleaned after its reset (git clean -d -x), so that
// nothing an earlier task left is there for the next. Mostly nothing is
// left but what the caller puts back at once (a worker's copy of the
// task's plan): the worktree is read here, against its index, and git
// clean runs only when something untracked is there; what the caller
// keeps (keep) is never removed, and the caller checks its content.

// ResetWorktreeKeeping is ResetWorktree leaving in place the untracked
// files keep names (slash-separated paths relative to dir, never .git),
// when they are there: everything else untracked, ignored or not, goes.
func (r *Repo) ResetWorktreeKeeping(ctx context.Context, dir, branch, base string, keep []string) error {
	if _, err := run(ctx, dir, nil, "checkout", "-q", "-f", "--ignore-other-worktrees", "-B", branch, base); err != nil {
		return fmt.Errorf("reuse worktree %s: %w", dir, err)
	}
	if onlyTracked(dir, keep) {
		return nil
	}
	args := []string{"clean", "-q", "-f", "-d", "-x"}
	for _, k := range keep {
		args = append(args, "-e", "/"+ignoreLiteral(k))
	}
	if _, err := run(ctx, dir, nil, args...); err != nil {
		return fmt.Errorf("clean worktree %s: %w", dir, err)
	}
	return nil
}

// onlyTracked reports whether the worktree dir holds nothing but what its
// index tracks and the files keep names (with the directories above
// them): nothing git clean -d -x would remove but those. false when it
// cannot tell.
func onlyTracked(dir string, keep []string) bool {
	g := worktreeGitDir(dir)
	if g == "" {
		return false
	}
	entries, ok := readIndex(filepath.Join(g, "index"))
	if !ok {
		return false
	}
	files := make(map[string]bool, len(entries)+len(keep))
	dirs := map[string]bool{}
	add := func(p string) {
		files[p] = true
		for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
			if dirs[p[:i]] {
				break
			}
			dirs[p[:i]] = true
		}
	}
	for _, e := range entries {
		add(e.path)
	}
	for _, k := range keep {
		add(k)
	}
	var walk func(rel string) bool
	walk = func(rel string) bool {
		list, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return false
		}
		for _, e := range list {
			p := e.Name()
			if rel == "" && p == ".git" {
				continue
			}
			if rel != "" {
				p = rel + "/" + p
			}
			switch {
			case files[p]:
				// A tracked file, link or submodule, or one kept.
			case e.IsDir() && dirs[p]:
				if !walk(p) {
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	return walk("")
}

// ignoreLiteral is path as an ignore pattern that matches it alone.
func ignoreLiteral(path string) string {
	var b strings.Builder
	for _, c := range path {
		if strings.ContainsRune(`\*?[ !#`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
