package gitwork

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A branch is moved here, as git's files backend moves it, when nothing
// asks for more (taskSetup: plain config, the files backend, the default
// reflog rule): its lock file taken, its value checked again under the
// lock, the lock renamed into place, the reflog lines appended (the
// branch's, and HEAD's when the main worktree is on it), git's own way of
// moving a ref, without fsync, as git does by default. Anything else (a
// packed branch, a name git might read otherwise, a lock held) is left to
// git update-ref: a move here is one git would make the same.

// zeroSHA is the object id a reflog gives a branch that did not exist.
const zeroSHA = "0000000000000000000000000000000000000000"

// plainRef matches the branch names moved here: components of letters,
// digits, '.', '_' and '-', none starting with '.' or ending with ".lock".
var plainRef = regexp.MustCompile(`^refs/heads/([A-Za-z0-9_-][A-Za-z0-9._-]*/)*[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// writeRef moves ref to newSHA as moveRef asks (cas: only from oldSHA, ""
// asking that the ref be missing; else from wherever it is) and reports
// whether it did; false leaves the move to git, nothing having moved.
func (r *Repo) writeRef(ctx context.Context, msg, ref, newSHA, oldSHA string, cas bool) bool {
	if !plainRef.MatchString(ref) || strings.Contains(ref, "..") || strings.HasSuffix(ref, ".lock") ||
		strings.Contains(ref, ".lock/") || !isHex(newSHA) || len(newSHA) != 40 || cas && oldSHA != "" && (!isHex(oldSHA) || len(oldSHA) != 40) {
		return false
	}
	s := r.taskSetup(ctx)
	if !s.plain || !s.refFiles {
		return false
	}
	common, err := r.commonDir(ctx)
	if err != nil {
		return false
	}
	if !cas {
		// Wherever it is: the value read now is checked again under the
		// lock, so a move meanwhile leaves this one to git.
		cur, err := os.ReadFile(filepath.Join(common, filepath.FromSlash(ref)))
		switch {
		case err == nil:
			oldSHA = strings.TrimSuffix(string(cur), "\n")
			if !isHex(oldSHA) || len(oldSHA) != 40 {
				return false
			}
		case errors.Is(err, fs.ErrNotExist):
			oldSHA = ""
		default:
			return false
		}
	}
	if oldSHA == "" && !packedFree(common, ref) {
		return false
	}
	headDir := ""
	if headBranch(common) == ref {
		headDir = common
	}
	if oldSHA == "" {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(common, filepath.FromSlash(ref))), 0o777); err != nil {
			return false
		}
	}
	return writeLooseRef(common, headDir, ref, newSHA, oldSHA, s.committer+" "+gitDate(time.Now()), msg)
}

// packedFree reports whether the packed refs of the git directory common
// hold neither ref nor a ref that would clash with it as a file with a
// directory (refs/heads/a beside refs/heads/a/b): a new loose ref may then
// be made without git, which checks both.
func packedFree(common, ref string) bool {
	data, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		_, name, ok := strings.Cut(line, " ")
		if !ok {
			return false
		}
		if name == ref || strings.HasPrefix(ref, name+"/") || strings.HasPrefix(name, ref+"/") {
			return false
		}
	}
	return true
}
