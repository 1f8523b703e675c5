package gitwork

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Land modes.
const (
	// LandRebase replays the task's commit onto the integration head: the
	// branch stays a line of one commit per task.
	LandRebase = "rebase"
	// LandMerge merges the task's branch into the integration head: a merge
	// commit with both parents.
	LandMerge = "merge"
)

// ConflictError says a commit could not land: the files both sides changed.
type ConflictError struct {
	Commit string
	Onto   string
	Files  []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s conflicts with %s in %s", short(e.Commit), short(e.Onto), strings.Join(e.Files, ", "))
}

// Land makes the commit that puts commit (a task's single commit, whose
// parent is its base) on top of onto, without touching any working tree:
// with LandRebase a copy of commit whose parent is onto, with LandMerge a
// merge of onto and commit. It does not move any branch (UpdateRef does).
// A *ConflictError says both sides changed the same lines.
func (r *Repo) Land(ctx context.Context, onto, commit, mode string) (string, error) {
	return r.LandWith(ctx, onto, commit, mode, LandOptions{})
}

// LandOptions are what a caller of LandWith knows already, which git need
// not be asked.
type LandOptions struct {
	// OnLine reports whether sha is known to be onto or one of its
	// ancestors: the integration heads the caller made itself, each on top
	// of the one before. A commit it does not vouch for (or a nil OnLine)
	// is asked of git.
	OnLine func(sha string) bool
}

// LandWith is Land with what the caller knows (see LandOptions). It reads
// commit once (git cat-file) for its parent, author and message, so that a
// landing costs the merge in the object store, the commit made from it,
// and nothing else.
func (r *Repo) LandWith(ctx context.Context, onto, commit, mode string, o LandOptions) (string, error) {
	c, err := r.readCommit(ctx, commit)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", short(commit), err)
	}
	if len(c.parents) == 0 {
		return "", fmt.Errorf("land %s: it has no parent (its base)", short(commit))
	}
	parent := c.parents[0]
	if mode == LandRebase && parent == onto {
		return commit, nil // already on top: a fast-forward
	}
	// The merge's base is commit's parent when that is on onto's line,
	// which a task's base always is (an earlier integration head): the
	// three-way merge is then exactly the replay of commit's change.
	if (o.OnLine == nil || !o.OnLine(parent)) && !r.isAncestor(ctx, parent, onto) {
		return "", fmt.Errorf("land %s: its base %s is not on the integration branch", short(commit), short(parent))
	}
	// The replay: same author, same message, parent onto; a merge has
	// commit as its second parent.
	parents := []string{onto}
	if mode == LandMerge {
		parents = append(parents, commit)
	}
	// Two tasks that changed different files merge here, without git
	// (treemerge.go); anything else is git's.
	tree, fast := "", false
	var trees []storedObject
	if len(c.parents) == 1 {
		tree, trees, fast = r.fastMerge(ctx, onto, commit, parent, c.tree)
	}
	if fast {
		// The trees made here and the commit are written together: one
		// pack (packstore.go). What cannot be written here is git's.
		o, ok := r.commitObject(ctx, c.author, tree, c.message, parents...)
		if ok && r.writeObjects(ctx, append(trees, o)) == nil {
			return o.sha, nil
		}
		if !ok && r.writeObjects(ctx, trees) == nil {
			return r.commitTreeAs(ctx, commit, c.author, tree, c.message, parents...)
		}
	}
	tree, err = r.mergeTree(ctx, onto, commit)
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			ce.Commit, ce.Onto = commit, onto
		}
		return "", err
	}
	if o, ok := r.commitObject(ctx, c.author, tree, c.message, parents...); ok && r.writeObjects(ctx, []storedObject{o}) == nil {
		return o.sha, nil
	}
	return r.commitTreeAs(ctx, commit, c.author, tree, c.message, parents...)
}

// Revert makes the commit that undoes commit on top of onto, without
// touching any working tree; its message says what it reverts and carries
// extra trailers.
func (r *Repo) Revert(ctx context.Context, onto, commit string, trailers []Trailer) (string, error) {
	parent, err := r.RevParse(ctx, commit+"^")
	if err != nil {
		return "", err
	}
	if !r.isAncestor(ctx, commit, onto) {
		return "", fmt.Errorf("revert %s: it is not on the integration branch", short(commit))
	}
	// The undo as a merge: a commit on top of commit with its parent's
	// tree, merged into onto, whose base with it is commit itself.
	ptree, err := run(ctx, r.Root, nil, "rev-parse", parent+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("read %s: %w", short(parent), err)
	}
	undo, err := r.commitTree(ctx, commit, strings.TrimSpace(ptree), "undo\n", commit)
	if err != nil {
		return "", err
	}
	tree, err := r.mergeTree(ctx, onto, undo)
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			ce.Commit, ce.Onto = commit, onto
		}
		return "", err
	}
	subj, err := run(ctx, r.Root, nil, "log", "-1", "--format=%s", commit)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", short(commit), err)
	}
	msg := Message(fmt.Sprintf("Revert %q", strings.TrimSpace(subj)), nil)
	msg += "\nThis reverts commit " + commit + ".\n"
	if len(trailers) > 0 {
		msg += "\n" + strings.TrimPrefix(Message("x", trailers), "x\n\n")
	}
	args := []string{"commit-tree", tree, "-p", onto, "-F", "-"}
	if !r.hasIdentity(ctx) {
		args = append(append([]string{}, fallbackIdentity...), args...)
	}
	out, err := run(ctx, r.Root, []byte(msg), args...)
	if err != nil {
		return "", fmt.Errorf("make the revert of %s: %w", short(commit), err)
	}
	return strings.TrimSpace(out), nil
}

// isAncestor reports whether a is an ancestor of b (or b itself).
func (r *Repo) isAncestor(ctx context.Context, a, b string) bool {
	_, err := run(ctx, r.Root, nil, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// mergeTree merges ours and theirs from their merge base in the object
// store and returns the tree; a conflict is a *ConflictError naming the
// files. (git merge-tree takes no explicit base before git 2.40: callers
// arrange for the base git finds to be the one they mean.)
func (r *Repo) mergeTree(ctx context.Context, ours, theirs string) (string, error) {
	out, err := run(ctx, r.Root, nil, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs)
	var ge *Error
	if err != nil && !errors.As(err, &ge) {
		return "", err
	}
	fields := strings.Split(out, "\x00")
	tree := strings.TrimSpace(fields[0])
	if err == nil {
		return tree, nil
	}
	// Exit 1 is a conflict: the tree, then the conflicted files.
	if ge.Stderr == "" && len(tree) >= 40 {
		var files []string
		for _, f := range fields[1:] {
			if f = strings.TrimSpace(f); f != "" && (len(files) == 0 || files[len(files)-1] != f) {
				files = append(files, f)
			}
		}
		return "", &ConflictError{Files: files}
	}
	return "", fmt.Errorf("merge in the object store: %w", err)
}

// commitTree makes a commit of tree with parents and msg, its author the
// author of from.
func (r *Repo) commitTree(ctx context.Context, from, tree, msg string, parents ...string) (string, error) {
	c, err := r.readCommit(ctx, from)
	if err != nil {
		return "", err
	}
	return r.commitTreeAs(ctx, from, c.author, tree, msg, parents...)
}

// commitTreeAs makes a commit of tree with parents and msg, its author
// author (the author line's value, name <email> date) when it parses.
func (r *Repo) commitTreeAs(ctx context.Context, from, author, tree, msg string, parents ...string) (string, error) {
	args := []string{}
	if !r.hasIdentity(ctx) {
		args = append(args, fallbackIdentity...)
	}
	args = append(args, "commit-tree", tree)
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	args = append(args, "-F", "-")
	out, err := runEnv(ctx, r.Root, []byte(msg), authorEnv(author), args...)
	if err != nil {
		return "", fmt.Errorf("make the landed commit of %s: %w", short(from), err)
	}
	return strings.TrimSpace(out), nil
}

// commitObject is what a commit says of itself: its tree, its parents, its author
// line (name <email> seconds zone) and its message, as stored.
type commitObject struct {
	tree    string
	parents []string
	author  string
	message string
}

// readCommit reads commit's object in one git call.
func (r *Repo) readCommit(ctx context.Context, commit string) (commitObject, error) {
	// A result a coordinator just unpacked is a loose object: read from
	// its file, it costs no process (loose.go).
	if typ, body, ok := r.looseObject(ctx, commit); ok && typ == "commit" {
		return parseCommit(string(body)), nil
	}
	out, err := run(ctx, r.Root, nil, "cat-file", "commit", commit)
	if err != nil {
		return commitObject{}, fmt.Errorf("read %s: %w", short(commit), err)
	}
	return parseCommit(out), nil
}

// authorEnv is the environment that makes git commit-tree write author (an
// author line's value: "name <email> seconds zone") as the commit's
// author; nil when it does not parse, and git then uses its own.
func authorEnv(author string) []string {
	lt := strings.LastIndexByte(author, '<')
	gt := strings.LastIndexByte(author, '>')
	if lt < 0 || gt < lt {
		return nil
	}
	name := strings.TrimSuffix(author[:lt], " ")
	email := author[lt+1 : gt]
	date := strings.TrimSpace(author[gt+1:])
	return []string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_AUTHOR_DATE=" + date}
}
