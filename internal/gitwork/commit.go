package gitwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/weavehq/weave/internal/layout"
)

// The trailers of a task's commit.
const (
	TrailerPlan    = "Weave-Plan"
	TrailerTask    = "Weave-Task"
	TrailerSession = "Weave-Session"
	TrailerAttempt = "Weave-Attempt"
)

// Trailer is one "Key: value" line at the end of a commit message.
type Trailer struct{ Key, Value string }

// fallbackIdentity is the author of a commit in a repository whose user
// set none: git would refuse to commit, and the task's work would be lost.
var fallbackIdentity = []string{"-c", "user.name=weave", "-c", "user.email=weave@localhost"}

// Commit records everything changed in the worktree dir (new files too,
// never what is under .weave/) as one commit on its branch, with subject
// and trailers, even when nothing changed, so that every task is one
// commit. It returns the commit's name.
func (r *Repo) Commit(ctx context.Context, dir, subject string, trailers []Trailer) (string, error) {
	// .weave/ is left out by a pathspec exclusion, in one git add. git
	// refuses an exclusion that names an ignored path that is there (a
	// worker's copy of the plan in a .weave/ the project ignores), unless
	// the exclusion is a pattern: .weave is spelt as one (.weav[e]) that
	// matches only it, and what is under it by a second. Should git still
	// refuse, .weave/ is left out by unstaging it instead, which also
	// keeps out a change to anything tracked there.
	if _, err := run(ctx, dir, nil, append([]string{"add", "-A", "--", "."}, excludeDotWeave...)...); err != nil {
		if _, lerr := os.Lstat(filepath.Join(dir, layout.DirName)); lerr != nil {
			return "", fmt.Errorf("stage the task's work in %s: %w", dir, err)
		}
		if _, err := run(ctx, dir, nil, "add", "-A", "--", "."); err != nil {
			return "", fmt.Errorf("stage the task's work in %s: %w", dir, err)
		}
		if _, err := run(ctx, dir, nil, "reset", "-q", "--", layout.DirName); err != nil {
			return "", fmt.Errorf("keep .weave out of the task's work in %s: %w", dir, err)
		}
	}
	// What git add staged is committed here when git commit would write
	// nothing more (taskcommit.go): a process less per task.
	msg := Message(subject, trailers)
	if sha, done, err := r.commitIndex(ctx, dir, msg); done {
		if err != nil {
			return "", fmt.Errorf("commit the task's work in %s: %w", dir, err)
		}
		return sha, nil
	}
	// git commit starts `git maintenance run --auto` after each commit, a
	// process per task that packs nothing until thousands of objects
	// piled up; the person's own next commit runs it as well.
	args := []string{"-c", "maintenance.auto=false", "commit", "-q", "--allow-empty", "--no-verify", "-F", "-"}
	if !r.hasIdentity(ctx) {
		args = append(append([]string{}, fallbackIdentity...), args...)
	}
	if _, err := run(ctx, dir, []byte(msg), args...); err != nil {
		return "", fmt.Errorf("commit the task's work in %s: %w", dir, err)
	}
	// The branch's loose ref, which git commit just wrote, names the
	// commit; git is asked when it cannot be read.
	if sha := r.headCommit(ctx, dir); sha != "" {
		return sha, nil
	}
	out, err := run(ctx, dir, nil, "rev-parse", "HEAD")
	if err != nil {
		return "", fmt.Errorf("read the task's commit: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// hasIdentity reports whether the repository's user set a name and an
// email; asked once per Repo (a task commits many times in a run, and the
// answer does not change under it).
func (r *Repo) hasIdentity(ctx context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.identity != nil {
		return *r.identity
	}
	out, err := run(ctx, r.Root, nil, "config", "--get-regexp", `^user\.(name|email)$`)
	if err != nil && ctx.Err() != nil {
		return false
	}
	ok := err == nil && strings.Contains(out, "user.name ") && strings.Contains(out, "user.email ")
	r.identity = &ok
	return ok
}

// excludeDotWeave are the pathspecs that leave the top .weave (a file, or
// a directory and everything under it) out of a git add. Spelt as
// patterns, they never name an ignored path git would refuse.
var excludeDotWeave = func() []string {
	n := len(layout.DirName)
	pat := layout.DirName[:n-1] + "[" + layout.DirName[n-1:] + "]"
	return []string{":(exclude)" + pat, ":(exclude)" + pat + "/**"}
}()

// Message is a commit message: subject on one line, then the trailers.
func Message(subject string, trailers []Trailer) string {
	subject = strings.Join(strings.Fields(subject), " ")
	if subject == "" {
		subject = "weave task"
	}
	var b strings.Builder
	b.WriteString(subject)
	b.WriteString("\n")
	if len(trailers) > 0 {
		b.WriteString("\n")
		for _, t := range trailers {
			fmt.Fprintf(&b, "%s: %s\n", t.Key, strings.Join(strings.Fields(t.Value), " "))
		}
	}
	return b.String()
}
