package gitwork

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// A run asks git the same few things of a worktree for every task: which
// git directory it is, which branch its HEAD is on and where that branch
// points. git keeps the answers in small files (the worktree's .git file,
// HEAD, a loose ref) that reading costs nothing beside a process. What is
// read here is only ever taken when it is exactly what git writes; anything
// else (a packed or reftable ref, a detached HEAD, a path git would resolve
// otherwise) says "cannot tell" and the caller asks git.

// worktreeGitDir is the git directory dir's .git file names, "" when dir
// has no such file.
func worktreeGitDir(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return ""
	}
	s, ok := strings.CutPrefix(string(b), "gitdir: ")
	s = strings.TrimSuffix(s, "\n")
	if !ok || s == "" || strings.ContainsAny(s, "\n\r") {
		return ""
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(dir, s)
	}
	return filepath.Clean(s)
}

// GitDir is the git directory of dir, a linked worktree of r that Worktree
// just made or reset, as git rev-parse --absolute-git-dir says it: read
// from the .git file git wrote there when it is one of r's worktrees'
// directories, else asked of git.
func (r *Repo) GitDir(ctx context.Context, dir string) (string, error) {
	if g := worktreeGitDir(dir); g != "" {
		real, err := filepath.EvalSymlinks(g)
		common, cerr := r.commonDir(ctx)
		if err == nil && cerr == nil && filepath.Dir(real) == filepath.Join(common, "worktrees") {
			return real, nil
		}
	}
	out, err := run(ctx, dir, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// headBranch is the branch (refs/heads/...) gitDir's HEAD is on, "" when
// it is detached or cannot be read.
func headBranch(gitDir string) string {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	ref, ok := strings.CutPrefix(string(b), "ref: ")
	ref = strings.TrimSuffix(ref, "\n")
	if !ok || !strings.HasPrefix(ref, "refs/heads/") || strings.ContainsAny(ref, "\n\r") || strings.Contains(ref, "..") {
		return ""
	}
	return ref
}

// looseRef is the commit ref (refs/heads/...) points at as its loose file
// in r's git directory says, "" when there is no such file.
func (r *Repo) looseRef(ctx context.Context, ref string) string {
	common, err := r.commonDir(ctx)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(common, filepath.FromSlash(ref)))
	if err != nil {
		return ""
	}
	sha := strings.TrimSuffix(string(b), "\n")
	if !isHex(sha) {
		return ""
	}
	return sha
}

func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// OnBranch reports, without a git process, that the worktree dir's git
// directory is gitDir (as git rev-parse --absolute-git-dir printed it),
// that its HEAD is on refs/heads/<branch> and that the branch points at
// commit: a worktree as it was made for a task, which nothing moved.
// false means it cannot tell from the files: the caller asks git.
func (r *Repo) OnBranch(ctx context.Context, dir, gitDir, branch, commit string) bool {
	g := worktreeGitDir(dir)
	if g == "" {
		return false
	}
	if g != filepath.Clean(gitDir) {
		if real, err := filepath.EvalSymlinks(g); err != nil || real != filepath.Clean(gitDir) {
			return false
		}
	}
	ref := headBranch(g)
	return ref == "refs/heads/"+branch && r.looseRef(ctx, ref) == commit
}

// headCommit is the commit the worktree dir's HEAD points at as git's
// files say, "" when they cannot tell.
func (r *Repo) headCommit(ctx context.Context, dir string) string {
	g := worktreeGitDir(dir)
	if g == "" {
		return ""
	}
	ref := headBranch(g)
	if ref == "" {
		return ""
	}
	return r.looseRef(ctx, ref)
}
