package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// dependents are the tasks of p that wait for t (their **Depends** or
// [after:] names it).
func dependents(p *plans.Plan, t plans.Task) []plans.Task {
	var out []plans.Task
	for _, o := range p.Tasks {
		if o.Key() != t.Key() && slices.Contains(o.After, t.Ordinal()) {
			out = append(out, o)
		}
	}
	return out
}

// confirmRevertOfDependedOn asks the person, on a terminal, before the
// commit of a task others wait for is reverted: their work may build on
// it. Off a terminal it refuses (a usage error, exit 2) and says to pass
// --force.
func confirmRevertOfDependedOn(s *Streams, p *plans.Plan, t plans.Task, deps []plans.Task) error {
	var names []string
	for _, d := range deps {
		state := ""
		if d.Done {
			state = " (done)"
		}
		names = append(names, strconv.Itoa(d.Ordinal())+state)
	}
	what := fmt.Sprintf("task %s of %s is one that task %s depend on", t.Label(), p.Name, strings.Join(names, ", "))
	if len(deps) == 1 {
		what = fmt.Sprintf("task %s of %s is one that task %s depends on", t.Label(), p.Name, names[0])
	}
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return usageErrorf("%s; nothing was reverted: pass --force to revert it anyway (`weave task undo %s %s --revert --force`)", what, p.Name, taskArg(t))
	}
	yes, err := confirm(s, what+"; their work may build on it. Revert it anyway? [y/N] ")
	if err != nil {
		return err
	}
	if !yes {
		return &exitError{code: exitFailed, err: errors.New("not reverted; nothing changed")}
	}
	return nil
}

// revertLanded undoes task t's commit on the integration branch of plan p
// (weave/<plan>, or the branch state.json names for the active plan): a
// revert commit made in the object store, with the plan's and task's
// trailers, onto which the branch moves by compare-and-swap. It returns
// what the message says of it. The caller holds the project lock.
func revertLanded(ctx context.Context, project string, st *plans.State, p *plans.Plan, t plans.Task) (string, error) {
	repo, err := gitwork.Open(ctx, project)
	if err != nil {
		return "", fmt.Errorf("--revert undoes a task's commit on its run's integration branch, and %s is not in a git repository", project)
	}
	// The branch moves once: its git process ends with the command.
	defer func() { _ = repo.Close() }()
	branch, since := "weave/"+p.Name, ""
	if st != nil && st.Integration != nil && st.IsActive(p.Path) && st.Integration.Branch != "" {
		branch, since = st.Integration.Branch, st.Integration.Base
	}
	ref := "refs/heads/" + branch
	head, err := repo.RevParse(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("plan %s has no integration branch %s: --revert undoes what a run with --workers landed there (plain `weave task undo %s %s` only unticks)", p.Name, branch, p.Name, taskArg(t))
	}
	_, cur, err := repo.Head(ctx)
	if err == nil && cur == branch {
		return "", fmt.Errorf("%s is checked out in %s; switch to another branch first, so that reverting on it does not leave your working tree behind it", branch, repo.Root)
	}
	commits, err := repo.TaskCommits(ctx, head, since, p.Name)
	if err != nil {
		return "", err
	}
	target := landedCommit(commits, t.Ordinal())
	if target == nil {
		return "", fmt.Errorf("task %s of %s has no commit on %s to revert (it never landed there, or it was reverted already)", t.Label(), p.Name, branch)
	}
	trailers := []gitwork.Trailer{{Key: gitwork.TrailerPlan, Value: p.Name}, {Key: gitwork.TrailerTask, Value: strconv.Itoa(t.Ordinal())}}
	rev, err := repo.Revert(ctx, head, target.SHA, trailers)
	var ce *gitwork.ConflictError
	if errors.As(err, &ce) {
		return "", fmt.Errorf("task %s of %s cannot be reverted on %s: later work changed the same lines in %s; nothing was reverted (undo the later tasks first, or revert it by hand with `git revert %s`)",
			t.Label(), p.Name, branch, strings.Join(ce.Files, ", "), shortSHA(target.SHA))
	}
	if err != nil {
		return "", err
	}
	if err := repo.UpdateRef(ctx, ref, rev, head); err != nil {
		return "", fmt.Errorf("%s moved while task %s was being reverted; nothing was reverted, run this again: %w", branch, t.Label(), err)
	}
	msg := fmt.Sprintf("reverted task %s of %s on %s (%s undoes %s)", t.Label(), p.Name, branch, shortSHA(rev), shortSHA(target.SHA))
	// The branch you are on may hold the task already (merged, or
	// fast-forwarded by run.finish: ff): the revert is not there yet.
	if cur != "" {
		if _, err := repo.Git(ctx, "", "merge-base", "--is-ancestor", target.SHA, "refs/heads/"+cur); err == nil {
			msg += fmt.Sprintf("; %s has the task's commit too: `git merge %s` brings the revert there", cur, branch)
		}
	}
	return msg, nil
}

// landedCommit is the newest commit of task n in commits (newest first)
// that no later commit reverts; nil when there is none.
func landedCommit(commits []gitwork.TaskCommit, n int) *gitwork.TaskCommit {
	reverted := map[string]bool{}
	for i, c := range commits {
		if c.Reverts != "" {
			reverted[c.Reverts] = true
			continue
		}
		if c.Task == n && !reverted[c.SHA] {
			return &commits[i]
		}
	}
	return nil
}
