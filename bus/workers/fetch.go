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
// points the task's branch at it. One git process of its own (the bundle
// unpacked; the commit is read from its file, the branch moved by the
// repository's long-lived update-ref process), where fetching the bundle
// took three and reading the commit and moving the branch one more each:
// the coordinator pays this for every task. No ref moves until the commit
// passed and held (the lease still names the award) said yes.
func fetchResult(ctx context.Context, repo *gitwork.Repo, data []byte, l Lease, want string, held func() error) error {
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
	// Read from the object just written, or by git when its message is
	// not plain (gitwork.ReadCommit).
	c, err := repo.ReadCommit(ctx, sha)
	if err != nil {
		return fmt.Errorf("read the result's commit: %w", err)
	}
	if len(c.Parents) != 1 || c.Parents[0] != l.Base {
		return fmt.Errorf("commit %s does not build on the task's base %s", want, l.Base)
	}
	tr := c.Trailers
	if tr[gitwork.TrailerPlan] != l.Run || tr[gitwork.TrailerTask] != strconv.Itoa(l.Task) || tr[gitwork.TrailerAttempt] != l.AttemptID {
		return fmt.Errorf("commit %s is not task %s, attempt %s (its trailers say otherwise)", want, l.Key, l.AttemptID)
	}
	if err := held(); err != nil {
		return err
	}
	if err := repo.SetBranch(context.WithoutCancel(ctx), l.Branch, want); err != nil {
		return err
	}
	return nil
}
