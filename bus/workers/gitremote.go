package workers

import (
	"context"
	"fmt"
	"regexp"
	"slices"
)

// A run may carry its code through a git remote instead of the bundle
// store (run.remote: origin): the coordinator pushes the base to
// refs/weave/base/<commit> there, the worker fetches it from the same
// remote and pushes its task's commit to refs/weave/results/<award>-<commit>,
// which the coordinator fetches and then deletes. Each ref names the commit
// it must hold, and each side checks that it got that commit: anyone else
// who can push to the remote can make a task fail, never slip in other
// code. The checks of the commit (its parent, its trailers, the lease and
// token of the result) are those of a bundle.

// commitName is a full commit name, as refs built from one must hold.
var commitName = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// awardID is an award's id as newID makes them.
var awardID = regexp.MustCompile(`^[0-9a-f]{16}$`)

func baseRef(base string) string { return "refs/weave/base/" + base }

func resultRef(award, commit string) string { return "refs/weave/results/" + award + "-" + commit }

// publishBase makes o's base reachable by the workers: pushed to the
// run's git remote, whose URL the offer then carries (the bundle store has
// a bundle for each worker, basis.go).
func (c *Coordinator) publishBase(ctx context.Context, o *Offer) error {
	if !commitName.MatchString(o.Base) {
		return fmt.Errorf("base %q is not a full commit name", o.Base)
	}
	o.Remote = c.opts.RemoteURL
	if _, done := c.pushed.Load(o.Base); done {
		return nil
	}
	if err := c.repo.PushRef(ctx, c.opts.Remote, o.Base, baseRef(o.Base)); err != nil {
		return err
	}
	c.pushed.Store(o.Base, true)
	return nil
}

// fetchResult brings the commit of a result into the repository at ref,
// from the bundle store or the run's git remote, and returns it.
func (c *Coordinator) fetchResult(ctx context.Context, res Result, ref string) (string, error) {
	if c.opts.Remote == "" {
		return c.store.FetchCommit(ctx, c.repo, bundleName("result", res.Award), ref)
	}
	if !commitName.MatchString(res.Commit) || !awardID.MatchString(res.Award) {
		return "", fmt.Errorf("result of award %q names %q, not a commit", res.Award, res.Commit)
	}
	remote := resultRef(res.Award, res.Commit)
	sha, err := c.repo.FetchRef(ctx, c.opts.Remote, remote, ref)
	if err != nil {
		return "", err
	}
	// The ref has served; a failure to delete it leaves a ref behind, no
	// more.
	_ = c.repo.DeleteRemoteRef(context.WithoutCancel(ctx), c.opts.Remote, remote)
	return sha, nil
}

// reaches reports whether the worker uses the git remote at url ("": the
// bundle store, which every worker uses).
func (a *Agent) reaches(url string) bool {
	return url == "" || slices.Contains(a.opts.Remotes, url)
}

// fetchBase brings the assignment's base into the worker's repository.
func (a *Agent) fetchBase(ctx context.Context, as Assignment) error {
	if as.Remote == "" {
		return a.fetchStoredBase(ctx, as)
	}
	if _, err := a.repo.RevParse(ctx, as.Base); err == nil {
		return nil
	}
	if !commitName.MatchString(as.Base) {
		return fmt.Errorf("base %q is not a full commit name", as.Base)
	}
	sha, err := a.repo.FetchRef(ctx, as.Remote, baseRef(as.Base), "refs/weave/base")
	if err != nil {
		return err
	}
	if sha != as.Base {
		return fmt.Errorf("the remote's %s holds %s, not the base", baseRef(as.Base), sha)
	}
	return nil
}

// sendResult makes the task's commit reachable by the coordinator: pushed
// to the run's git remote, or bundled, the bundle returned to travel in
// the result when small (inline.go), else stored.
func (a *Agent) sendResult(ctx context.Context, as Assignment, commit string) ([]byte, error) {
	if as.Remote == "" {
		return a.resultBundle(ctx, as, commit)
	}
	if !awardID.MatchString(as.Award) {
		return nil, fmt.Errorf("award %q is not an award's id", as.Award)
	}
	return nil, a.repo.PushRef(ctx, as.Remote, commit, resultRef(as.Award, commit))
}

// fetchFromRemote brings the result's commit from the run's git remote onto
// the task's branch, after checking that it is what the lease was for.
func (c *Coordinator) fetchFromRemote(ctx context.Context, l Lease, res *Result) error {
	ref := "refs/weave/results/" + res.Award
	sha, err := c.fetchResult(ctx, *res, ref)
	if err != nil {
		return fmt.Errorf("fetch the commit of task %s: %w", l.Key, err)
	}
	defer func() { _, _ = c.repo.Git(context.WithoutCancel(ctx), "", "update-ref", "-d", ref) }()
	if sha != res.Commit {
		return fmt.Errorf("the remote holds %s, the result names %s", sha, res.Commit)
	}
	parent, err := c.repo.RevParse(ctx, sha+"^")
	if err != nil || parent != l.Base {
		return fmt.Errorf("commit %s does not build on the task's base %s", sha, l.Base)
	}
	commits, err := c.repo.TaskCommits(ctx, sha, l.Base, l.Run)
	if err != nil {
		return err
	}
	if len(commits) != 1 || commits[0].Task != l.Task || commits[0].Attempt != l.AttemptID {
		return fmt.Errorf("commit %s is not task %s, attempt %s (its trailers say otherwise)", sha, l.Key, l.AttemptID)
	}
	if _, err := c.repo.BranchAt(ctx, l.Branch, sha, true); err != nil {
		return err
	}
	return nil
}
