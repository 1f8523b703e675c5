package workers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/weavehq/weave/internal/gitwork"
)

// fetchResult writes the objects of a result bundle into repo, checks
// that the bundle names one commit, want, whose one parent is the lease's
// base and whose trailers name the lease's run, task and attempt, and
// points the task's branch at it. Three git processes in all (the bundle
// unpacked, the commit read, the branch moved), where fetching the bundle
// took three of its own: the coordinator pays this for every task. No ref
// moves until the commit passed.
func fetchResult(ctx context.Context, repo *gitwork.Repo, data []byte, l Lease, award, want string) error {
	if strings.ContainsFunc(l.Branch, unicode.IsSpace) {
		return fmt.Errorf("branch name %q holds a space", l.Branch)
	}
	sha, err := repo.UnpackBundle(ctx, data)
	if err != nil {
		return fmt.Errorf("fetch the result bundle: %w", err)
	}
	if sha != want {
		return fmt.Errorf("the bundle holds %s, the result names %s", sha, want)
	}
	out, err := repo.Git(ctx, "", "log", "-1", "--no-walk", "--format=%H%x00%P%x00%(trailers:only,unfold)", sha, "--")
	if err != nil {
		return fmt.Errorf("read the result's commit: %w", err)
	}
	p := strings.SplitN(strings.TrimLeft(out, "\n"), "\x00", 3)
	if len(p) < 3 || p[0] != want {
		return fmt.Errorf("the bundle's %s is no commit", want)
	}
	if parents := strings.TrimSpace(p[1]); parents != l.Base {
		return fmt.Errorf("commit %s does not build on the task's base %s", want, l.Base)
	}
	tr := map[string]string{}
	for _, line := range strings.Split(p[2], "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			tr[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if tr[gitwork.TrailerPlan] != l.Run || tr[gitwork.TrailerTask] != strconv.Itoa(l.Task) || tr[gitwork.TrailerAttempt] != l.AttemptID {
		return fmt.Errorf("commit %s is not task %s, attempt %s (its trailers say otherwise)", want, l.Key, l.AttemptID)
	}
	if _, err := repo.Git(context.WithoutCancel(ctx), "", "update-ref", "-m", "weave: branch", "refs/heads/"+l.Branch, want); err != nil {
		return fmt.Errorf("point branch %s at %s: %w", l.Branch, want, err)
	}
	return nil
}
