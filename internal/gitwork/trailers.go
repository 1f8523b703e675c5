package gitwork

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// TaskCommit is a commit of a task on a branch, as its trailers say.
type TaskCommit struct {
	SHA     string
	Subject string
	Plan    string
	// Task is the task's number (its ordinal when unnumbered).
	Task    int
	Session string
	Attempt string
	// Reverts is the commit this one reverts, "" for a task's own commit.
	Reverts string
}

// TaskCommits lists the commits of plan's tasks reachable from rev and not
// from since ("" for all of them), newest first; a commit without the
// Weave-Plan trailer of plan is left out.
func (r *Repo) TaskCommits(ctx context.Context, rev, since, plan string) ([]TaskCommit, error) {
	rng := rev
	if since != "" {
		rng = since + ".." + rev
	}
	const sep = "\x1e"
	out, err := run(ctx, r.Root, nil, "log", "--format=%H%x00%s%x00%(trailers:only,unfold)%x00%b"+sep, rng, "--")
	if err != nil {
		return nil, fmt.Errorf("read the commits of %s: %w", rev, err)
	}
	var list []TaskCommit
	for _, rec := range strings.Split(out, sep) {
		f := strings.SplitN(strings.TrimLeft(rec, "\n"), "\x00", 4)
		if len(f) < 3 {
			continue
		}
		c := TaskCommit{SHA: f[0], Subject: f[1]}
		for _, line := range strings.Split(f[2], "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			switch strings.TrimSpace(k) {
			case TrailerPlan:
				c.Plan = v
			case TrailerTask:
				c.Task, _ = strconv.Atoi(v)
			case TrailerSession:
				c.Session = v
			case TrailerAttempt:
				c.Attempt = v
			}
		}
		if len(f) == 4 {
			if _, after, ok := strings.Cut(f[3], "This reverts commit "); ok {
				c.Reverts = strings.TrimSuffix(strings.Fields(after + " ")[0], ".")
			}
		}
		if c.Plan == plan {
			list = append(list, c)
		}
	}
	return list, nil
}
