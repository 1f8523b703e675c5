package gitwork

import (
	"context"
	"crypto/sha1"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A task's commit is written here, without git commit, once git add has
// staged its work: the trees of the worktree's index, the commit with the
// repository's author and committer, the branch moved onto it from its
// parent. That is what git commit --no-verify writes when nothing in the
// repository asks for more (plainConfig, no message cleanup other than
// git's default, no hook git commit would run); anything else, or anything
// not read here (a packed tree, an index git would read otherwise), is left
// to git commit: a worktree's own config or a conditional include, a
// merge, cherry-pick or revert in progress, a hook installed at any time.
// The config is asked once per Repo (one run), the hooks at every commit.
// Like git commit, it refuses to write a tree naming an object the
// repository lacks.

// msgCommit is the reflog message of a task's commit.
const msgCommit = "weave: commit"

// taskSetup is what committing a task without git needs to know of the
// repository, asked once per Repo.
type taskSetup struct {
	// plain says nothing asks for more than the writer does.
	plain bool
	// author and committer are "name <email>" as git commit would write
	// them.
	author, committer string
	// refFiles says a branch may be moved here, as git's files backend
	// moves it, its reflog kept as git keeps it by default.
	refFiles bool
}

// commitHooks are the hooks git commit --no-verify runs.
var commitHooks = []string{"prepare-commit-msg", "post-commit", "post-index-change", "reference-transaction"}

// taskSetup is r's, asked of git the first time.
func (r *Repo) taskSetup(ctx context.Context) taskSetup {
	r.taskMu.Lock()
	defer r.taskMu.Unlock()
	r.mu.Lock()
	if r.tasking != nil {
		s := *r.tasking
		r.mu.Unlock()
		return s
	}
	r.mu.Unlock()
	s, ok := r.askTaskSetup(ctx)
	if !ok {
		return taskSetup{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tasking = &s
	return s
}

// askTaskSetup reads what taskSetup holds; ok is false when git could not
// be asked.
func (r *Repo) askTaskSetup(ctx context.Context) (taskSetup, bool) {
	land := r.landSetup(ctx)
	if !land.plain {
		return taskSetup{}, ctx.Err() == nil
	}
	out, ok := r.configList(ctx)
	if !ok {
		return taskSetup{}, ctx.Err() == nil
	}
	refFiles := true
	for _, kv := range strings.Split(out, "\x00") {
		k, _, _ := strings.Cut(kv, "\n")
		if strings.HasPrefix(strings.ToLower(k), "includeif.") {
			// A conditional include (onbranch:, gitdir:) may say other
			// things in the task's worktree than in the repository's.
			return taskSetup{}, true
		}
		switch strings.ToLower(k) {
		case "core.hookspath", "commit.cleanup", "extensions.partialclone", "extensions.worktreeconfig":
			// A worktree's own config (extensions.worktreeConfig) is not
			// read here, where git commit in the worktree would read it.
			return taskSetup{}, true
		case "core.logallrefupdates", "core.bare", "extensions.refstorage", "core.filesreflocktimeout", "core.packedrefstimeout":
			// git itself moves the branch when the config asks for
			// another reflog rule or another backend.
			switch v := strings.ToLower(strings.TrimPrefix(kv[len(k):], "\n")); {
			case strings.EqualFold(k, "core.bare") && v == "false":
			case strings.EqualFold(k, "core.logallrefupdates") && (v == "true" || v == "always"):
			default:
				refFiles = false
			}
		}
	}
	args := []string{"var", "GIT_AUTHOR_IDENT"}
	if !r.hasIdentity(ctx) {
		args = append(append([]string{}, fallbackIdentity...), args...)
	}
	id, err := run(ctx, r.Root, nil, args...)
	if err != nil {
		return taskSetup{}, ctx.Err() == nil
	}
	id = strings.TrimSuffix(id, "\n")
	gt := strings.LastIndexByte(id, '>')
	if gt < 0 {
		return taskSetup{}, true
	}
	who := id[:gt+1]
	if _, ok := identDate(who + " 0 +0000"); !ok {
		return taskSetup{}, true
	}
	return taskSetup{plain: true, author: who, committer: land.committer, refFiles: refFiles}, true
}

// commitIndex commits the index of the worktree dir on the branch its
// HEAD is on, with msg, and returns the commit; done is false when git
// commit must do it (nothing was moved then). An error is the branch's
// move that failed.
func (r *Repo) commitIndex(ctx context.Context, dir, msg string) (sha string, done bool, err error) {
	s := r.taskSetup(ctx)
	if !s.plain {
		return "", false, nil
	}
	msg, ok := cleanMessage(msg)
	if !ok || strings.IndexByte(msg, 0) >= 0 {
		return "", false, nil
	}
	common, err := r.commonDir(ctx)
	if err != nil {
		return "", false, nil
	}
	// A hook installed since the run began runs as git would run it.
	for _, h := range commitHooks {
		if _, err := os.Lstat(filepath.Join(common, "hooks", h)); err == nil {
			return "", false, nil
		}
	}
	g := worktreeGitDir(dir)
	if g == "" {
		return "", false, nil
	}
	if real, err := filepath.EvalSymlinks(g); err != nil || filepath.Dir(real) != filepath.Join(common, "worktrees") {
		return "", false, nil
	}
	// A merge, cherry-pick or revert in progress makes git commit write
	// more (other parents, another author) and clear its state.
	for _, f := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "MERGE_MSG", "SQUASH_MSG"} {
		if _, err := os.Lstat(filepath.Join(g, f)); err == nil {
			return "", false, nil
		}
	}
	ref := headBranch(g)
	if ref == "" {
		return "", false, nil
	}
	parent := r.looseRef(ctx, ref)
	if len(parent) != 2*sha1.Size || !r.plainHistory(ctx) {
		return "", false, nil
	}
	entries, ok := readIndex(filepath.Join(g, "index"))
	if !ok {
		return "", false, nil
	}
	baseTree, ok := r.looseCommitTree(ctx, parent)
	if !ok {
		return "", false, nil
	}
	w := indexTrees{r: r, ctx: ctx}
	tree, ok := w.tree("", entries, baseTree)
	if !ok {
		return "", false, nil
	}
	now := gitDate(time.Now())
	body := "tree " + tree + "\nparent " + parent + "\nauthor " + s.author + " " + now +
		"\ncommitter " + s.committer + " " + now + "\n\n" + msg
	if !gitUTF8(body) {
		return "", false, nil
	}
	// The trees and the commit are written together: one pack
	// (packstore.go).
	c := newStored("commit", []byte(body))
	if err := r.writeObjects(ctx, append(w.made, c)); err != nil {
		return "", false, nil
	}
	sha = c.sha
	// The worktree's HEAD is on ref: its reflog gets the line too.
	if err := r.moveRefAt(ctx, g, msgCommit, ref, sha, parent, true); err != nil {
		return "", true, err
	}
	return sha, true, nil
}

// indexTrees makes the trees of an index's entries, for the commit to be
// written with them.
type indexTrees struct {
	r    *Repo
	ctx  context.Context
	made []storedObject
}

// tree makes the tree of entries, every one of them under prefix (""
// or "dir/"), and returns its name; base is the tree at prefix in the
// parent commit ("" when there is none), which tells the objects known to
// be there. ok is false when an object it names is not known to be in the
// repository, or a tree could not be read or written here.
func (w *indexTrees) tree(prefix string, entries []indexEntry, base string) (string, bool) {
	var have map[string]treeEntry
	if base != "" {
		list, _, ok := w.r.looseTree(w.ctx, base)
		if !ok {
			return "", false
		}
		have = make(map[string]treeEntry, len(list))
		for _, e := range list {
			have[e.name] = e
		}
	}
	var out []treeEntry
	for i := 0; i < len(entries); {
		rest := entries[i].path[len(prefix):]
		slash := strings.IndexByte(rest, '/')
		if slash < 0 {
			e := entries[i]
			if !validName(rest) || !w.known(e, have[rest]) {
				return "", false
			}
			out = append(out, treeEntry{mode: e.mode, name: rest, sha: e.sha})
			i++
			continue
		}
		name := rest[:slash]
		sub := prefix + name + "/"
		j := i + 1
		for j < len(entries) && strings.HasPrefix(entries[j].path, sub) {
			j++
		}
		if !validName(name) {
			return "", false
		}
		subBase := ""
		if b, ok := have[name]; ok && b.isTree() {
			subBase = b.sha
		}
		sha, ok := w.tree(sub, entries[i:j], subBase)
		if !ok {
			return "", false
		}
		out = append(out, treeEntry{mode: "40000", name: name, sha: sha})
		i = j
	}
	body, err := encodeTree(out)
	if err != nil {
		return "", false
	}
	o := newStored("tree", body)
	w.made = append(w.made, o)
	return o.sha, true
}

// known reports whether the object e names is in the repository: the
// parent's tree has it at the same path, or r holds it (hasObject). A
// submodule's commit is not the repository's, and git does not look for
// it either.
func (w *indexTrees) known(e indexEntry, was treeEntry) bool {
	if e.mode == "160000" || was.sha == e.sha && blobMode(was.mode) && blobMode(e.mode) {
		return true
	}
	return w.r.hasObject(w.ctx, e.sha)
}

// blobMode reports whether mode is that of a tree entry naming a blob (a
// file, an executable, a symbolic link): not a tree, not a submodule's
// commit, which the repository need not hold.
func blobMode(mode string) bool {
	return mode == "100644" || mode == "100755" || mode == "120000"
}

// validName reports whether name is a path component git keeps in a tree.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && name != ".git"
}

// cleanMessage is msg as git commit's default cleanup of a message given
// whole (-F) leaves it: trailing white space off every line, no empty line
// first or last, runs of empty lines made one, a newline at the end. ok is
// false when nothing is left (git refuses an empty message).
func cleanMessage(msg string) (string, bool) {
	var b strings.Builder
	empty := 0
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimRight(line, " \t\n\v\f\r")
		if line == "" {
			empty++
			continue
		}
		if empty > 0 && b.Len() > 0 {
			b.WriteByte('\n')
		}
		empty = 0
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String(), b.Len() > 0
}
