package workers_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/internal/gitwork"
)

// TestWrongResultRefused: a worker holding the lease, with the award's
// token, returns a commit that is not its task's: one with another
// attempt's trailer, one that builds on a commit of its own rather than
// the base, a merge whose first parent is the base, and one whose tree
// holds a .GIT directory (its objects whole, as a pack the coordinator
// checks without git). Each is refused:
// the task's branch is never made and nothing of the result's bundle is
// left in the coordinator's refs.
func TestWrongResultRefused(t *testing.T) {
	trailers := func(a workers.Assignment, attempt string) []gitwork.Trailer {
		return []gitwork.Trailer{{Key: gitwork.TrailerPlan, Value: a.Run}, {Key: gitwork.TrailerTask, Value: fmt.Sprint(a.Task)}, {Key: gitwork.TrailerAttempt, Value: attempt}}
	}
	work := func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, file string) (string, error) {
		dir := filepath.Join(r.Root, ".weave", "worktrees", "w-"+a.Award)
		if err := r.Worktree(ctx, dir, "w-"+a.Award, a.Base); err != nil {
			return "", err
		}
		return dir, os.WriteFile(filepath.Join(dir, file), []byte(file+"\n"), 0o644)
	}
	cases := map[string]workers.Exec{
		"another attempt": func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			dir, err := work(ctx, r, a, "x.txt")
			if err != nil {
				return "", err
			}
			return r.Commit(ctx, dir, a.Title, trailers(a, "someone-else"))
		},
		"not on the base": func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			dir, err := work(ctx, r, a, "hidden.txt")
			if err != nil {
				return "", err
			}
			if _, err := r.Commit(ctx, dir, "smuggled", nil); err != nil {
				return "", err
			}
			if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x\n"), 0o644); err != nil {
				return "", err
			}
			return r.Commit(ctx, dir, a.Title, trailers(a, a.AttemptID))
		},
		"a merge": func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			dir, err := work(ctx, r, a, "hidden.txt")
			if err != nil {
				return "", err
			}
			side, err := r.Commit(ctx, dir, "smuggled", nil)
			if err != nil {
				return "", err
			}
			if _, err := r.Git(ctx, dir, "reset", "-q", "--hard", a.Base); err != nil {
				return "", err
			}
			msg := gitwork.Message(a.Title, trailers(a, a.AttemptID))
			if _, err := r.Git(ctx, dir, "-c", "user.name=m", "-c", "user.email=m@localhost", "merge", "-q", "--no-ff", "-m", msg, side); err != nil {
				return "", err
			}
			out, err := r.Git(ctx, dir, "rev-parse", "HEAD")
			return strings.TrimSpace(out), err
		},
		"a tree holding .GIT": func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			// Whole objects over loose ones: the coordinator checks them
			// without git, and must refuse as git would.
			dir, err := work(ctx, r, a, "x.txt")
			if err != nil {
				return "", err
			}
			blob, err := r.GitInput(ctx, dir, []byte("[core]\n\thooksPath = /tmp\n"), "hash-object", "-w", "--stdin")
			if err != nil {
				return "", err
			}
			sub, err := r.GitInput(ctx, dir, []byte("100644 blob "+strings.TrimSpace(blob)+"\tconfig\n"), "mktree")
			if err != nil {
				return "", err
			}
			entries, err := r.Git(ctx, dir, "ls-tree", a.Base)
			if err != nil {
				return "", err
			}
			tree, err := r.GitInput(ctx, dir, []byte(entries+"040000 tree "+strings.TrimSpace(sub)+"\t.GIT\n"), "mktree")
			if err != nil {
				return "", err
			}
			msg := gitwork.Message(a.Title, trailers(a, a.AttemptID))
			out, err := r.GitInput(ctx, dir, []byte(msg), "-c", "user.name=m", "-c", "user.email=m@localhost", "commit-tree", strings.TrimSpace(tree), "-p", a.Base)
			return strings.TrimSpace(out), err
		},
	}
	for name, exec := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, 5*time.Second)
			w.join("liar", nil, exec)
			ctx, cancel := context.WithCancel(ctxT(t))
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := w.coord.Offer(ctx, w.offer(1, workers.Needs{}))
				done <- err
			}()
			guard := time.After(20 * time.Second)
			for w.count("work.refused", "liar") == 0 {
				select {
				case err := <-done:
					t.Fatalf("Offer returned %v; the wrong commit was taken", err)
				case <-guard:
					t.Fatal("the wrong result was never refused")
				case <-time.After(20 * time.Millisecond):
				}
			}
			if got := git(t, w.repo.Root, "for-each-ref", "refs/heads/weave/", "refs/weave/results/"); strings.TrimSpace(got) != "" {
				t.Fatalf("refs after the refused result:\n%s", got)
			}
			cancel()
			<-done
		})
	}
}
