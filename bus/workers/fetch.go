package workers

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/weavehq/weave/internal/gitwork"
)

// fetchResult fetches a result bundle into repo under a namespace of the
// award's own, checks that it holds one commit, want, whose one parent is
// the lease's base and whose trailers name the lease's run, task and
// attempt, points the task's branch at it and drops the namespace. Three
// git commands in all, where fetching, resolving and reading the commit
// one question at a time took seven: the coordinator pays this for every
// task.
func fetchResult(ctx context.Context, repo *gitwork.Repo, data []byte, l Lease, award, want string) (err error) {
	f, err := os.CreateTemp("", "weave-result-*.bundle")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	ns := "refs/weave/results/" + award + "/"
	if _, err := repo.Git(ctx, "", "fetch", "-q", "--no-tags", "--no-write-fetch-head", f.Name(), "+refs/weave/bundles/*:"+ns+"*"); err != nil {
		return fmt.Errorf("fetch the result bundle: %w", err)
	}
	if strings.ContainsFunc(l.Branch, unicode.IsSpace) {
		return fmt.Errorf("branch name %q holds a space", l.Branch)
	}
	const sep = "\x1e"
	out, err := repo.Git(ctx, "", "log", "--no-walk", "--source", "--format=%H%x00%P%x00%S%x00%(trailers:only,unfold)"+sep, "--glob="+ns+"*", "--")
	var refs []string
	// The namespace goes, in the one transaction that points the task's
	// branch at the commit when it is the one wanted, else alone.
	branch := ""
	defer func() {
		var tx strings.Builder
		if branch != "" {
			fmt.Fprintf(&tx, "update refs/heads/%s %s\n", l.Branch, branch)
		}
		for _, r := range refs {
			// A ref name holds no space or control character (git
			// check-ref-format); one that did is not the namespace's.
			if strings.HasPrefix(r, ns) && !strings.ContainsFunc(r, unicode.IsSpace) {
				fmt.Fprintf(&tx, "delete %s\n", r)
			}
		}
		if tx.Len() == 0 {
			return
		}
		if _, uerr := repo.GitInput(context.WithoutCancel(ctx), "", []byte(tx.String()), "update-ref", "-m", "weave: branch", "--stdin"); uerr != nil && err == nil && branch != "" {
			err = fmt.Errorf("point branch %s at %s: %w", l.Branch, branch, uerr)
		}
	}()
	if err != nil {
		return fmt.Errorf("read the result's commit: %w", err)
	}
	type commit struct{ sha, parents, ref, trailers string }
	var got []commit
	for _, rec := range strings.Split(out, sep) {
		p := strings.SplitN(strings.TrimLeft(rec, "\n"), "\x00", 4)
		if len(p) < 4 {
			continue
		}
		got = append(got, commit{p[0], strings.TrimSpace(p[1]), p[2], p[3]})
		refs = append(refs, p[2])
	}
	if len(got) != 1 {
		return fmt.Errorf("the bundle holds %d commits, want one", len(got))
	}
	c := got[0]
	if c.sha != want {
		return fmt.Errorf("the bundle holds %s, the result names %s", c.sha, want)
	}
	if c.parents != l.Base {
		return fmt.Errorf("commit %s does not build on the task's base %s", c.sha, l.Base)
	}
	tr := map[string]string{}
	for _, line := range strings.Split(c.trailers, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			tr[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if tr[gitwork.TrailerPlan] != l.Run || tr[gitwork.TrailerTask] != strconv.Itoa(l.Task) || tr[gitwork.TrailerAttempt] != l.AttemptID {
		return fmt.Errorf("commit %s is not task %s, attempt %s (its trailers say otherwise)", c.sha, l.Key, l.AttemptID)
	}
	branch = c.sha
	return nil
}
