package run

import (
	"context"
	"strings"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/plans"
)

// Event types of the review of a finished plan (review.on_complete).
const (
	// EventReviewStarted: the reviewers (in Reason) have the plan's work.
	EventReviewStarted = "review.started"
	// EventReview carries one reviewer's verdict: Agent, Verdict, the
	// reasons in Reason, or why it gave none in Error.
	EventReview = "review"
)

// ReviewRequest is what the review of a finished plan works from.
type ReviewRequest struct {
	// Session is the run's session; the reviewers work in it.
	Session string
	Plan    *plans.Plan
	// Since is the plan's start_sha: the work is the change since it. It
	// is empty outside a git repository.
	Since string
}

// Reviewer has the work of a finished plan reviewed and returns one review
// per reviewer; a reviewer that could not answer has its Error set.
type Reviewer func(ctx context.Context, req ReviewRequest) []agents.Review

// Reviewed is the review of a finished plan.
type Reviewed struct {
	// Since is the commit the reviewed change starts from ("" outside git).
	Since   string
	Reviews []agents.Review
	// Interrupted is set when the run was interrupted (Ctrl-C) during the
	// review: the reviews that did not finish say nothing of the work.
	Interrupted bool
}

// Rejected lists the reviews that did not approve the plan's work: a
// rejection, an answer without a verdict, or a reviewer that could not
// answer. The plan stays complete; the run's exit says so.
func (r *Reviewed) Rejected() []agents.Review {
	if r == nil {
		return nil
	}
	var out []agents.Review
	for _, rv := range r.Reviews {
		if !rv.Approved() {
			out = append(out, rv)
		}
	}
	return out
}

// review has the finished plan p reviewed when the run was given a
// Reviewer, showing and keeping each verdict.
func (r *runner) review(ctx context.Context, p *plans.Plan) {
	if r.o.Review == nil {
		return
	}
	pr := p.Progress()
	base := Event{Plan: p.Name, Completed: pr.Completed, Total: pr.Total}
	ev := base
	ev.Type, ev.Time, ev.Reason = EventReviewStarted, r.o.Now(), strings.Join(agents.Reviewers(), ", ")
	r.o.Observe(ev)
	var since string
	if r.st != nil {
		since = r.st.StartSHA
	}
	r.res.Review = &Reviewed{Since: since, Reviews: r.o.Review(ctx, ReviewRequest{Session: r.session, Plan: p, Since: since})}
	r.res.Review.Interrupted = ctx.Err() != nil
	for _, rv := range r.res.Review.Reviews {
		ev := base
		ev.Type, ev.Time, ev.Agent, ev.Verdict, ev.Reason, ev.Error = EventReview, r.o.Now(), rv.Reviewer, string(rv.Verdict), rv.Reasons, rv.Error
		r.o.Observe(ev)
		r.o.Logger.Info("review", "plan", p.Name, "reviewer", rv.Reviewer, "verdict", rv.Verdict, "error", rv.Error)
	}
}
