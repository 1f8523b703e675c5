package gitwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/weavehq/weave/internal/proc"
)

// ErrNotRepo says the directory is not inside a git working tree.
var ErrNotRepo = errors.New("not a git repository")

// Repo is a git repository, seen from its main working tree.
type Repo struct {
	// Root is the top-level directory of the main working tree.
	Root string

	// mu guards what is asked of git once per Repo: whether the user set
	// an identity, and the real path of the git directory (kept only once
	// known: a call cut short by its context is asked again).
	mu       sync.Mutex
	identity *bool
	common   string
	landing  *landSetup // what landing without git needs (landcommit.go)
	// config is the config as git lists it, read once (unpackloose.go).
	config *configRead
	// tasking is what committing a task without git needs
	// (taskcommit.go).
	tasking *taskSetup
	// taskMu makes tasks that commit at once ask for taskSetup once.
	taskMu sync.Mutex

	// adminMu makes this process's git worktree add, prune and remove,
	// and its git fetch, run one at a time: each reads every worktree git
	// records, and one being added beside it may be half written (its
	// commondir made but still empty), which git takes for a broken
	// repository ("failed to read .../commondir: Success").
	adminMu sync.Mutex

	// movers move refs through long-lived git processes (refmover.go).
	movers refMovers
	// packs are the packs of objects known here (packstore.go).
	packs packSet
	// deflaters are the zlib writers of the objects written here
	// (objects.go).
	deflaters sync.Pool
}

// Open finds the repository dir is in. It returns ErrNotRepo when there is
// none, or when git is missing.
func Open(ctx context.Context, dir string) (*Repo, error) {
	out, err := run(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("%w: git is not installed (%v)", ErrNotRepo, ee.Err)
		}
		return nil, fmt.Errorf("%w: %s", ErrNotRepo, dir)
	}
	root := strings.TrimSpace(out)
	if root == "" {
		return nil, fmt.Errorf("%w: %s (a bare repository)", ErrNotRepo, dir)
	}
	return &Repo{Root: filepath.Clean(root)}, nil
}

// Error is a git command that failed: its arguments and what it printed on
// stderr.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// run runs git with args in dir and returns its stdout.
func run(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	return runEnv(ctx, dir, stdin, nil, args...)
}

// runEnv is run with env added to git's environment.
func runEnv(ctx context.Context, dir string, stdin []byte, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	// git never waits for a person to type a password.
	cmd.Env = append(append(proc.Env(proc.Git, proc.EnvOptions{}), "GIT_TERMINAL_PROMPT=0"), env...)
	cmd.SysProcAttr = proc.ChildAttr()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return "", err
		}
		return stdout.String(), &Error{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// Git runs git with args in dir (a working tree of r) and returns its
// stdout.
func (r *Repo) Git(ctx context.Context, dir string, args ...string) (string, error) {
	if dir == "" {
		dir = r.Root
	}
	return run(ctx, dir, nil, args...)
}

// GitInput is Git with stdin (update-ref --stdin, say).
func (r *Repo) GitInput(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	if dir == "" {
		dir = r.Root
	}
	return run(ctx, dir, stdin, args...)
}

// RevParse resolves rev to a full commit name.
func (r *Repo) RevParse(ctx context.Context, rev string) (string, error) {
	out, err := run(ctx, r.Root, nil, "rev-parse", "--verify", "-q", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	return strings.TrimSpace(out), nil
}

// Head returns the main working tree's HEAD commit and its branch; branch
// is "" when HEAD is detached, and sha "" on a branch with no commit yet.
func (r *Repo) Head(ctx context.Context) (sha, branch string, err error) {
	out, err := run(ctx, r.Root, nil, "symbolic-ref", "-q", "--short", "HEAD")
	if err == nil {
		branch = strings.TrimSpace(out)
	}
	if out, err := run(ctx, r.Root, nil, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		sha = strings.TrimSpace(out)
	}
	return sha, branch, nil
}

// Dirty lists the files of the main working tree that differ from HEAD
// (changed, staged, or untracked and not ignored), relative to the root,
// among paths when paths is not empty (each a file or a directory), else
// all of them. Paths under .weave/ are never listed: they are the host's.
func (r *Repo) Dirty(ctx context.Context, paths []string) ([]string, error) {
	args := []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--"}
	if len(paths) == 0 {
		args = append(args, ".")
	}
	args = append(args, paths...)
	args = append(args, ":(exclude).weave")
	out, err := run(ctx, r.Root, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("look for uncommitted changes: %w", err)
	}
	var files []string
	recs := strings.Split(out, "\x00")
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) < 4 {
			continue
		}
		files = append(files, rec[3:])
		if rec[0] == 'R' || rec[0] == 'C' {
			i++ // the source name of a rename follows
		}
	}
	return files, nil
}

// BranchAt makes branch point at commit, creating it when missing; an
// existing branch is left where it is unless force is set. It returns
// where the branch points.
func (r *Repo) BranchAt(ctx context.Context, branch, commit string, force bool) (string, error) {
	if !force {
		if cur, err := r.RevParse(ctx, "refs/heads/"+branch); err == nil {
			return cur, nil
		}
	}
	if err := r.SetBranch(ctx, branch, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// UpdateRef moves ref (a full name, refs/heads/...) from old to new as one
// compare-and-swap: it fails when ref no longer points at old.
func (r *Repo) UpdateRef(ctx context.Context, ref, newSHA, oldSHA string) error {
	if err := r.moveRef(ctx, msgLand, ref, newSHA, oldSHA, true); err != nil {
		return fmt.Errorf("move %s from %s to %s: %w", ref, short(oldSHA), short(newSHA), err)
	}
	return nil
}

// Worktree makes dir a clean working tree of r on branch, which is made to
// point at base: a new worktree when dir is none, else the existing one
// reset and cleaned (ignored files too), so that nothing of an earlier task
// is left in it.
func (r *Repo) Worktree(ctx context.Context, dir, branch, base string) error {
	if r.isWorktree(ctx, dir) {
		return r.ResetWorktree(ctx, dir, branch, base)
	}
	// A directory left by a worktree git no longer knows (a crash between
	// its creation and its record), or one that is no worktree of r any
	// more, is pruned first.
	r.clearStale(ctx, dir)
	// Added bare (no branch, no checkout), then checked out on branch:
	// git worktree add -B would start three git processes of its own for
	// the same, and a run's workers all add theirs at once. A branch
	// checked out in another worktree (a task's earlier attempt on
	// another worker) is taken over, as worktree add -f did.
	if _, err := r.addWorktree(ctx, dir, "worktree", "add", "-q", "-f", "--detach", "--no-checkout", dir, base); err != nil {
		return fmt.Errorf("add worktree %s: %w", dir, err)
	}
	if _, err := run(ctx, dir, nil, "checkout", "-q", "-f", "--ignore-other-worktrees", "-B", branch, base); err != nil {
		return fmt.Errorf("check out %s in worktree %s: %w", branch, dir, err)
	}
	return nil
}

// addWorktree runs git worktree add (args) to make dir, and once more
// after a prune when it failed: git may still record a worktree there
// whose directory is gone in a way -f does not override, which the prune
// forgets.
func (r *Repo) addWorktree(ctx context.Context, dir string, args ...string) (string, error) {
	r.adminMu.Lock()
	defer r.adminMu.Unlock()
	out, err := run(ctx, r.Root, nil, args...)
	if err != nil && ctx.Err() == nil {
		_ = os.RemoveAll(dir)
		_, _ = run(ctx, r.Root, nil, "worktree", "prune")
		out, err = run(ctx, r.Root, nil, args...)
	}
	return out, err
}

// ResetWorktree is Worktree for a dir the caller knows to be a worktree of
// r: one it made, and checked after the last thing that ran in it (its
// git directory is still its own). It does not ask git again.
func (r *Repo) ResetWorktree(ctx context.Context, dir, branch, base string) error {
	return r.ResetWorktreeKeeping(ctx, dir, branch, base, nil)
}

// Detached makes dir a clean working tree of r at commit, its HEAD
// detached: where a landed tree is checked.
func (r *Repo) Detached(ctx context.Context, dir, commit string) error {
	if r.isWorktree(ctx, dir) {
		if _, err := run(ctx, dir, nil, "checkout", "-q", "-f", "--detach", commit); err != nil {
			return fmt.Errorf("check out %s in %s: %w", short(commit), dir, err)
		}
		if _, err := run(ctx, dir, nil, "clean", "-q", "-f", "-d", "-x"); err != nil {
			return fmt.Errorf("clean worktree %s: %w", dir, err)
		}
		return nil
	}
	r.clearStale(ctx, dir)
	if _, err := r.addWorktree(ctx, dir, "worktree", "add", "-q", "-f", "--detach", dir, commit); err != nil {
		return fmt.Errorf("add worktree %s: %w", dir, err)
	}
	return nil
}

// isWorktree reports whether dir is a linked worktree of r: its top is dir,
// and its git directory is one of r's worktrees. A directory whose .git was
// rewritten (to point at the main tree's repository, or another) is not:
// git run there would act on what it points at.
func (r *Repo) isWorktree(ctx context.Context, dir string) bool {
	if _, err := os.Lstat(dir); err != nil {
		return false // nothing there: no git to ask
	}
	out, err := run(ctx, dir, nil, "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return false
	}
	f := strings.Split(strings.TrimSpace(out), "\n")
	if len(f) != 3 {
		return false
	}
	common := f[2]
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	mine, err := r.commonDir(ctx)
	if err != nil {
		return false
	}
	top, err1 := filepath.EvalSymlinks(f[0])
	want, err2 := filepath.EvalSymlinks(dir)
	gitDir, err3 := filepath.EvalSymlinks(f[1])
	common, err4 := filepath.EvalSymlinks(common)
	return err1 == nil && err2 == nil && err3 == nil && err4 == nil && top == want && common == mine &&
		filepath.Dir(gitDir) == filepath.Join(mine, "worktrees")
}

// CommonDir is r's git directory (the main tree's .git, which its linked
// worktrees share), its real path; asked of git once per Repo.
func (r *Repo) CommonDir(ctx context.Context) (string, error) { return r.commonDir(ctx) }

// commonDir is r's git directory (the main tree's .git), its real path.
func (r *Repo) commonDir(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.common != "" {
		return r.common, nil
	}
	out, err := run(ctx, r.Root, nil, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", err
	}
	d := strings.TrimSpace(out)
	if !filepath.IsAbs(d) {
		d = filepath.Join(r.Root, d)
	}
	if d, err = filepath.EvalSymlinks(d); err != nil {
		return "", err
	}
	r.common = d
	return d, nil
}

// clearStale removes dir when it is there but no worktree of r (a
// leftover, or one whose .git was rewritten), and prunes what git no
// longer has, so that a worktree can be made there afresh. When dir is not
// there, nothing is pruned: git worktree add -f takes the place of a
// worktree git still records but whose directory is gone, and a run prunes
// once when it starts (Settle).
func (r *Repo) clearStale(ctx context.Context, dir string) {
	if _, err := os.Lstat(dir); err == nil {
		_ = os.RemoveAll(dir)
		r.adminMu.Lock()
		defer r.adminMu.Unlock()
		_, _ = run(ctx, r.Root, nil, "worktree", "prune")
	}
}

// RemoveWorktree removes the worktree at dir, changes and all.
func (r *Repo) RemoveWorktree(ctx context.Context, dir string) error {
	r.adminMu.Lock()
	defer r.adminMu.Unlock()
	if _, err := run(ctx, r.Root, nil, "worktree", "remove", "-f", "-f", dir); err != nil {
		return fmt.Errorf("remove worktree %s: %w", dir, err)
	}
	return nil
}

// Prune forgets the worktrees whose directories are gone.
func (r *Repo) Prune(ctx context.Context) error {
	r.adminMu.Lock()
	defer r.adminMu.Unlock()
	if _, err := run(ctx, r.Root, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	return nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
