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
// headDir is the git directory of the worktree the move is made from
// ("": the main one), whose HEAD's reflog gets the line too when HEAD is
// on ref, as git update-ref run there would write it.
func (r *Repo) writeRef(ctx context.Context, headDir, msg, ref, newSHA, oldSHA string, cas bool) bool {
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
	if headDir == "" {
		headDir = common
	}
	if headBranch(headDir) != ref {
		headDir = ""
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

// writeLooseRef moves the loose ref (refs/heads/...) in the git directory
// common from oldSHA to newSHA as git's files backend does: under its lock
// file, checked again there, the lock moved into place, then its reflog
// line appended, and the one of HEAD in the worktree's git directory
// headDir, which points at the ref. false means nothing was moved (the
// lock is taken, the ref is not at oldSHA, a file could not be written):
// the caller asks git. A reflog line that could not be appended once the
// ref moved is lost, as git loses it.
func writeLooseRef(common, headDir, ref, newSHA, oldSHA, who, msg string) bool {
	path := filepath.Join(common, filepath.FromSlash(ref))
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return false
	}
	done := false
	defer func() {
		if !done {
			_ = os.Remove(lock)
		}
	}()
	// Checked again under the lock: "" asks that the ref be missing.
	cur, err := os.ReadFile(path)
	if oldSHA == "" {
		if !errors.Is(err, fs.ErrNotExist) {
			_ = f.Close()
			return false
		}
	} else if err != nil || strings.TrimSuffix(string(cur), "\n") != oldSHA {
		_ = f.Close()
		return false
	}
	_, werr := f.WriteString(newSHA + "\n")
	if cerr := f.Close(); werr != nil || cerr != nil {
		return false
	}
	if err := os.Rename(lock, path); err != nil {
		return false
	}
	done = true
	from := oldSHA
	if from == "" {
		from = zeroSHA
	}
	line := from + " " + newSHA + " " + who + "\t" + msg + "\n"
	appendLog(filepath.Join(common, "logs", filepath.FromSlash(ref)), line)
	if headDir != "" {
		appendLog(filepath.Join(headDir, "logs", "HEAD"), line)
	}
	return true
}

// appendLog appends line to the reflog at path, made when missing.
func appendLog(path, line string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return
	}
	lf, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return
	}
	_, _ = lf.WriteString(line)
	_ = lf.Close()
}
