package run

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// recover settles what a run with workers that died (SIGKILL, a power
// cut) left in state.json, before anything runs again. The worktrees git
// no longer has are pruned (the others are reused). For each task that was
// running:
//
//   - its commit is on the integration branch but its box is not ticked
//     (the run died between moving the branch and ticking): its verify
//     blocks run on its landed tree, then it is ticked; when they fail the
//     commit is reverted on the branch and the task runs again. These are
//     settled first, in the branch's order, oldest first; once one was
//     reverted, those above it are verified on the branch as it now is;
//   - its commit is on its task branch (recorded, or found by the attempt's
//     trailer) and not landed: it lands, as a worker's fresh commit would;
//   - else it runs again.
//
// So no task is ticked without its landed verify, no commit lands twice
// (landCommit skips a task already on the branch) and no work committed on
// a task branch is lost.
func (c *coordinator) recover(ctx context.Context, p *plans.Plan) (*plans.Plan, error) {
	r := c.r
	// A killed run's git children leave their lock files behind, and a
	// worktree cut off while it was made stays locked: the next run could
	// neither reuse nor prune them.
	if err := c.repo.Settle(ctx, c.dir, IntegrationBranch(p.Name)); err != nil {
		r.o.Logger.Warn("settle the worktrees a killed run left", "err", err)
	}
	if len(r.st.Running) == 0 {
		return p, nil
	}
	todo, err := c.settleOrder(ctx, p)
	if err != nil {
		return p, err
	}
	// Once a task is reverted, the landed trees of those above it held
	// its work: they are verified on the branch as it now is.
	reverted := false
	for _, e := range todo {
		key, rec, t := e.key, e.rec, e.task
		t, _ = r.tools.AsStarted(ctx, p, t)
		c.attempts[key] = rec.Attempt
		head, err := c.readHead(ctx)
		if err != nil {
			return p, err
		}
		pr := p.Progress()
		worker, _ := strconv.Atoi(rec.Worker)
		j := &job{slot: -1, task: t, a: Assignment{Plan: p, Task: t, Session: r.session, Base: rec.Base, Branch: rec.Branch, Attempt: rec.Attempt, AttemptID: rec.AttemptID},
			start: r.o.Now(), recovered: true}
		j.base = Event{Plan: p.Name, Task: taskNumber(t), Title: t.Title, Verification: t.Verification, Completed: pr.Completed, Total: pr.Total,
			Attempt: rec.Attempt, MaxAttempts: c.maxAttempts(), Worker: worker}
		j.out, j.close = r.taskLog(t, j.base, r.logPath(p, t), rec.Attempt)
		landed, err := c.landedCommit(ctx, head, t)
		if err != nil {
			j.close()
			return p, err
		}
		switch {
		case landed != "":
			r.warn(fmt.Sprintf("the last run stopped after landing task %s; its verify blocks run again before it is ticked", t.Label()))
			np, back, err := c.settleLanded(ctx, p, j, head, landed, reverted)
			j.close()
			if err != nil {
				return p, err
			}
			p, reverted = np, reverted || back
		case c.committed(ctx, rec) != "":
			commit := c.committed(ctx, rec)
			r.warn(fmt.Sprintf("the last run stopped before landing task %s; its committed work lands now", t.Label()))
			rec.Commit = commit
			if np := c.land(ctx, p, j, commit, 0); np != nil {
				p = np
			}
			j.close()
		default:
			r.warn(fmt.Sprintf("the last run stopped during task %s; it runs again", t.Label()))
			delete(r.st.Running, key)
			j.close()
		}
		if c.failure != nil {
			break
		}
	}
	return p, r.save()
}

// committed is the commit a running record's attempt left on its task
// branch: the one recorded, else the branch's tip when its trailer names
// the attempt; "" when the attempt committed nothing.
func (c *coordinator) committed(ctx context.Context, rec *plans.Running) string {
	if rec.Commit != "" {
		if _, err := c.repo.RevParse(ctx, rec.Commit); err == nil {
			return rec.Commit
		}
	}
	if rec.Branch == "" || rec.Base == "" {
		return ""
	}
	tip, err := c.repo.RevParse(ctx, "refs/heads/"+rec.Branch)
	if err != nil || tip == rec.Base {
		return ""
	}
	commits, err := c.repo.TaskCommits(ctx, tip, rec.Base, c.r.plan)
	if err != nil || len(commits) != 1 || commits[0].Attempt != rec.AttemptID || commits[0].SHA != tip {
		return ""
	}
	return tip
}

// settleLanded finishes a task whose commit is on the integration branch
// but whose box is not ticked: its verify blocks run on its landed tree
// (the tree of its commit there, as the landing verified it: the tasks
// landed with it in one batch each have theirs), or on head once this
// recovery reverted a task below it; then it is ticked. A failing verify
// reverts the commit on the branch (reverted) and the task runs again.
func (c *coordinator) settleLanded(ctx context.Context, p *plans.Plan, j *job, head, landed string, onHead bool) (np *plans.Plan, reverted bool, err error) {
	r := c.r
	t := j.task
	tree := landed
	if onHead {
		tree = head
	}
	refusal, err := c.verifyAt(ctx, t, tree, j.out)
	if err != nil {
		return p, false, err
	}
	if refusal == "" {
		np, _, err := c.tick(ctx, p, t)
		if err != nil {
			return p, false, err
		}
		npr := np.Progress()
		ev := j.base
		ev.Type, ev.Time, ev.Completed, ev.Total, ev.Commit = EventTaskDone, r.o.Now(), npr.Completed, npr.Total, landed
		r.o.Observe(ev)
		r.fireTaskDone(ctx, np, t, npr.Completed)
		r.tasksDone(ctx, np, []plans.Task{t})
		return np, false, nil
	}
	rev, err := c.repo.Revert(ctx, head, landed, []gitwork.Trailer{{Key: gitwork.TrailerPlan, Value: p.Name},
		{Key: gitwork.TrailerTask, Value: strconv.Itoa(t.Ordinal())}, {Key: gitwork.TrailerSession, Value: r.session}})
	if err != nil {
		return p, false, fmt.Errorf("revert task %s, whose verify blocks fail on the landed tree: %w", t.Label(), err)
	}
	if err := c.repo.UpdateRef(ctx, c.ref, rev, head); err != nil {
		return p, false, err
	}
	c.advance(rev)
	delete(r.st.Running, t.Key())
	r.warn(fmt.Sprintf("task %s's verify blocks fail on the landed tree; its commit is reverted on %s and it runs again", t.Label(), c.branch))
	return p, true, r.save()
}

// settling is a task a dead run left running, to be settled.
type settling struct {
	key  string
	rec  *plans.Running
	task plans.Task
}

// settleOrder is the tasks a dead run left running that are still open in
// p, in the order they are settled: those landed on the integration branch
// first, oldest first (a task's landed tree holds those below it, which
// are settled before it), then the others in the plan's order. The records
// of tasks no longer open are dropped.
func (c *coordinator) settleOrder(ctx context.Context, p *plans.Plan) ([]settling, error) {
	r := c.r
	var todo []settling
	for key, rec := range r.st.Running {
		i := slices.IndexFunc(p.Tasks, func(t plans.Task) bool { return t.Key() == key })
		if i < 0 || p.Tasks[i].Done {
			delete(r.st.Running, key)
			continue
		}
		todo = append(todo, settling{key: key, rec: rec, task: p.Tasks[i]})
	}
	head, err := c.readHead(ctx)
	if err != nil {
		return nil, err
	}
	landed, err := c.landedCommits(ctx, head)
	if err != nil {
		return nil, err
	}
	// landed is newest first: a higher place is further down the branch.
	place := map[int]int{}
	for i, tc := range landed {
		place[tc.Task] = len(landed) - i
	}
	slices.SortFunc(todo, func(a, b settling) int {
		pa, pb := place[taskNumber(a.task)], place[taskNumber(b.task)]
		switch {
		case pa != pb && pa > 0 && pb > 0:
			return pa - pb
		case pa > 0 && pb == 0:
			return -1
		case pb > 0 && pa == 0:
			return 1
		}
		return a.task.Index - b.task.Index
	})
	return todo, nil
}
