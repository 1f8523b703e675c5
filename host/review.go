package host

// Reviews: Weft and Warp judge a plan's work in parallel, each asked over
// the bus on its agent topic (agent:weft, agent:warp), as delegation is.
// The work is the working tree's change since the plan's start_sha, new
// files included. Each verdict is appended to the session's transcript
// (.weave/sessions/<id>.jsonl) as a line of type "review".

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/plans"
)

// MaxReviewDiff bounds the diff a reviewer gets in its request; past it the
// diff is cut at a line and the reviewer is told to read the rest itself.
const MaxReviewDiff = 256 << 10

// ReviewOptions chooses what `weave review` reviews.
type ReviewOptions struct {
	// Plan names the plan; empty means state.json's active plan.
	Plan string
	// Since is the commit the work started from; empty means the plan's
	// start_sha in state.json.
	Since string
	// Session is the session the reviewers work in; empty means a new one.
	Session string
	// Started, when set, is told what is reviewed once it is known, before
	// the reviewers are asked.
	Started func(plan, since string)
}

// ReviewReport is what a review found.
type ReviewReport struct {
	Plan    string
	Since   string
	Session string
	// Transcript is the session's transcript, where the verdicts are kept,
	// relative to the project.
	Transcript string
	Reviews    []agents.Review
}

// Rejected lists the reviews that did not approve.
func (r ReviewReport) Rejected() []agents.Review {
	return (&run.Reviewed{Since: r.Since, Reviews: r.Reviews}).Rejected()
}

// ErrNoGit reports a review asked for where there is no git history to
// take the work's diff from.
var ErrNoGit = errors.New("no git history to review")

// Review has Weft and Warp review the work of a plan on demand: the
// working tree's diff since the plan's start_sha (or o.Since). The host
// must be opened WithBus and WithTools.
func (h *Host) Review(ctx context.Context, o ReviewOptions) (ReviewReport, error) {
	if h.tools == nil || h.bus == nil {
		return ReviewReport{}, errors.New("review: the host was opened without its bus and tools (host.WithBus, host.WithTools)")
	}
	p, since, err := h.reviewTarget(o)
	if err != nil {
		return ReviewReport{}, err
	}
	if o.Started != nil {
		o.Started(p.Name, since)
	}
	session := o.Session
	if session == "" {
		session = run.NewSessionID(time.Now())
	}
	// Outside a run nothing serves the agents: serve them for this session.
	stop, err := busface.ServeAgents(ctx, h.bus, h.sup, h.gate.Names(), busface.ToolServices(h.tools, session, h.logger))
	if err != nil {
		return ReviewReport{}, err
	}
	defer func() { _ = stop() }()
	reviews, err := h.reviewPlan(ctx, session, p, since)
	if err != nil {
		return ReviewReport{}, err
	}
	return ReviewReport{Plan: p.Name, Since: since, Session: session, Reviews: reviews,
		Transcript: filepath.Join(layout.DirName, "sessions", session+".jsonl")}, nil
}

// reviewTarget finds the plan to review and the commit its work started
// from.
func (h *Host) reviewTarget(o ReviewOptions) (*plans.Plan, string, error) {
	if plans.GitHead(h.project) == "" {
		return nil, "", fmt.Errorf("%w: %s is not in a git repository with a commit (or git is not installed); a review reads the change since the plan started from git", ErrNoGit, h.project)
	}
	st, _, err := plans.ProjectStore(h.project).Read()
	if err != nil {
		return nil, "", err
	}
	var p *plans.Plan
	switch {
	case o.Plan != "":
		if p, err = plans.Find(h.project, o.Plan); err != nil {
			return nil, "", err
		}
	case st != nil && st.ActivePlan != "":
		if p, err = plans.Load(st.ActivePlan); err != nil {
			return nil, "", fmt.Errorf("read the active plan: %w", err)
		}
	default:
		return nil, "", errors.New("no active plan in .weave/state.json: name the plan with --plan NAME (see `weave plan list`)")
	}
	since := o.Since
	if since == "" {
		active := st != nil && sameFile(st.ActivePlan, p.Path)
		switch {
		case active && st.StartSHA != "":
			since = st.StartSHA
		case active:
			return nil, "", fmt.Errorf("%w: plan %s was started outside a git repository, so .weave/state.json has no start_sha; name the commit its work started from with --since REF", ErrNoGit, p.Name)
		default:
			return nil, "", fmt.Errorf("no start_sha for plan %s: .weave/state.json records it only for the active plan (and clears it when a plan completes); name the commit its work started from with --since REF", p.Name)
		}
	}
	// The transcript keeps the commit, not a name that moves (HEAD, main).
	out, err := proc.GitOutput(context.Background(), h.project, "rev-parse", "--verify", "-q", since+"^{commit}")
	if err != nil {
		return nil, "", fmt.Errorf("%s is not a commit of this repository: give --since a commit, branch or tag", since)
	}
	return p, strings.TrimSpace(string(out)), nil
}

func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// reviewFinished is the run's Reviewer (review.on_complete): the run serves
// the agents on the bus for its session while it lasts.
func (h *Host) reviewFinished(ctx context.Context, req run.ReviewRequest) []agents.Review {
	reviews, err := h.reviewPlan(ctx, req.Session, req.Plan, req.Since)
	if err != nil {
		reviews = nil
		for _, role := range agents.Reviewers() {
			reviews = append(reviews, agents.Review{Reviewer: role, Verdict: agents.VerdictNone, Error: err.Error()})
		}
		h.recordReviews(req.Session, req.Plan.Name, req.Since, reviews)
	}
	return reviews
}

// reviewPlan asks every reviewer at once about p's work since the commit
// since ("" outside git: the reviewers read the files), records each
// verdict in the session's transcript, and returns them in the order of
// agents.Reviewers.
func (h *Host) reviewPlan(ctx context.Context, session string, p *plans.Plan, since string) ([]agents.Review, error) {
	if h.bus == nil {
		return nil, errors.New("reviews go over the bus, and this host has none")
	}
	in := agents.ReviewInput{Plan: p.Name, PlanPath: layout.NewProject(h.project).Rel(p.Path), Since: since}
	if since != "" {
		diff, cut, err := workingTreeDiff(ctx, h.project, since)
		if err != nil {
			return nil, err
		}
		in.Diff, in.Cut = diff, cut
	}
	// A reviewer the project disabled (disabled_agents) does not review.
	reviewers := slices.DeleteFunc(agents.Reviewers(), func(r string) bool {
		if h.gate == nil {
			return false
		}
		_, ok := h.gate.Role(r)
		return !ok
	})
	out := make([]agents.Review, len(reviewers))
	var wg sync.WaitGroup
	for i, role := range reviewers {
		wg.Go(func() {
			// No "from" chain: the reviewer acts as itself, with its own
			// capability row, not as anyone's delegate.
			answer, err := busface.RequestAgent(ctx, h.bus, role,
				busface.AgentRequest{Type: busface.AgentRequestType, Prompt: agents.ReviewPrompt(role, in), SessionID: session}, "weave")
			if err != nil {
				msg := err.Error()
				var ae *busface.AgentError
				if errors.As(err, &ae) {
					// The review names the reviewer already.
					msg = strings.TrimPrefix(ae.Message, role+": ")
				}
				out[i] = agents.Review{Reviewer: role, Verdict: agents.VerdictNone, Error: msg}
				return
			}
			out[i] = agents.NewReview(role, answer)
		})
	}
	wg.Wait()
	h.recordReviews(session, p.Name, since, out)
	return out, nil
}

// recordReviews keeps the verdicts in the session's transcript.
func (h *Host) recordReviews(session, plan, since string, reviews []agents.Review) {
	if h.model == nil {
		return
	}
	for _, rv := range reviews {
		if err := h.model.RecordReview(session, plan, since, rv); err != nil {
			h.logger.Warn("record the review", "session", session, "reviewer", rv.Reviewer, "err", err)
		}
	}
}

// reviewExcludes are the machine-local files under .weave/ that are never
// part of the work, whatever .gitignore says. They are left out of the
// diff, not of `git add`, which refuses to be named ignored paths.
var reviewExcludes = []string{
	":(exclude).weave/sessions", ":(exclude).weave/logs", ":(exclude).weave/run", ":(exclude).weave/cache",
	":(exclude).weave/state.json*", ":(exclude).weave/weave.lock",
}

// workingTreeDiff is the change of the working tree under project since
// the commit since, new files not yet added included, cut to
// MaxReviewDiff. The repository's own index is not touched: the new files
// are staged in a copy of it.
func workingTreeDiff(ctx context.Context, project, since string) (string, bool, error) {
	tmp, err := os.MkdirTemp("", "weave-review-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = project
		cmd.Env = proc.Env(proc.Git, proc.EnvOptions{Set: []string{"GIT_INDEX_FILE=" + index}})
		cmd.SysProcAttr = proc.ChildAttr()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
			return nil, fmt.Errorf("take the diff: git %s: %w: %s", args[0], err, msg)
		}
		return out, nil
	}
	// Start from the real index (its stat cache saves hashing every file
	// again), else from HEAD.
	if real, err := git("rev-parse", "--path-format=absolute", "--git-path", "index"); err == nil {
		if b, err := os.ReadFile(strings.TrimSpace(string(real))); err == nil {
			_ = os.WriteFile(index, b, 0o600)
		}
	}
	if _, err := os.Stat(index); err != nil {
		if _, err := git("read-tree", "HEAD"); err != nil {
			return "", false, err
		}
	}
	if _, err := git("add", "-A", "--", "."); err != nil {
		return "", false, err
	}
	out, err := git(append([]string{"diff", "--cached", "--no-color", "--no-ext-diff", "--find-renames", since, "--", "."}, reviewExcludes...)...)
	if err != nil {
		return "", false, err
	}
	if len(out) <= MaxReviewDiff {
		return string(out), false, nil
	}
	cut := out[:MaxReviewDiff]
	if i := bytes.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return string(cut), true, nil
}
