package agents

import (
	"fmt"
	"regexp"
	"strings"
)

// Verdict is a reviewer's decision on a piece of work.
type Verdict string

// The verdicts. VerdictNone is an answer that carries neither: it does not
// approve anything.
const (
	VerdictApprove Verdict = "approve"
	VerdictReject  Verdict = "reject"
	VerdictNone    Verdict = "none"
)

// Reviewers are the roles that review a finished plan, in the order their
// verdicts are shown.
func Reviewers() []string { return []string{Weft, Warp} }

// Review is one reviewer's answer on a piece of work.
type Review struct {
	// Reviewer is the role that reviewed (weft, warp).
	Reviewer string  `json:"reviewer"`
	Verdict  Verdict `json:"verdict"`
	// Reasons is the answer after the verdict: the blocking issues of a
	// rejection, the why of an approval.
	Reasons string `json:"reasons,omitempty"`
	// Error says why the reviewer gave no answer (no model, the bus, a
	// provider failure); Verdict is then VerdictNone.
	Error string `json:"error,omitempty"`
}

// Approved reports whether the review lets the work ship: only an explicit
// approval does.
func (r Review) Approved() bool { return r.Verdict == VerdictApprove && r.Error == "" }

// Summary is the review in one line for people: the reviewer, the verdict
// and the first line of its reasons, or why there is no verdict.
func (r Review) Summary() string {
	switch {
	case r.Error != "":
		return fmt.Sprintf("%s could not review: %s", r.Reviewer, r.Error)
	case r.Verdict == VerdictNone:
		return fmt.Sprintf("%s gave no verdict: %s", r.Reviewer, firstLine(r.Reasons))
	}
	s := fmt.Sprintf("%s [%s]", r.Reviewer, strings.ToUpper(string(r.Verdict)))
	if l := firstLine(r.Reasons); l != "" {
		s += " " + l
	}
	return s
}

// NewReview reads a reviewer's answer into a Review.
func NewReview(reviewer, answer string) Review {
	v, reasons := ParseVerdict(answer)
	return Review{Reviewer: reviewer, Verdict: v, Reasons: reasons}
}

// ParseVerdict reads the verdict of a reviewer's answer and the reasons
// after it. Reviewers are told to start with [APPROVE] or [REJECT]; models
// dress it up, so the parse is liberal: markdown emphasis, headings,
// quotes and code ticks around it, leading spaces, any case, a
// "Verdict:" label, and lines of preamble before it are all accepted. The
// first line that carries a bracketed verdict decides; failing that, a
// first line that starts with the bare word (APPROVE, Rejected). A line
// naming both verdicts decides nothing. Without a verdict the answer is
// VerdictNone and reasons is the whole answer.
func ParseVerdict(answer string) (Verdict, string) {
	lines := strings.Split(strings.ReplaceAll(answer, "\r\n", "\n"), "\n")
	first := -1
	for i, raw := range lines {
		line := plainLine(raw)
		if line == "" {
			continue
		}
		if first < 0 {
			first = i
		}
		m := bracketVerdict.FindAllStringSubmatchIndex(line, -1)
		if len(m) == 0 {
			continue
		}
		v := verdictOf(line[m[0][2]:m[0][3]])
		for _, o := range m[1:] {
			if verdictOf(line[o[2]:o[3]]) != v {
				return VerdictNone, strings.TrimSpace(answer)
			}
		}
		return v, reasonsAfter(lines, i, line[m[0][1]:])
	}
	if first >= 0 {
		line := plainLine(lines[first])
		if m := bareVerdict.FindStringSubmatchIndex(line); m != nil {
			return verdictOf(line[m[2]:m[3]]), reasonsAfter(lines, first, line[m[1]:])
		}
	}
	return VerdictNone, strings.TrimSpace(answer)
}

var (
	bracketVerdict = regexp.MustCompile(`(?i)\[\s*(approve|reject)\s*\]`)
	bareVerdict    = regexp.MustCompile(`(?i)^(?:verdict\s*:\s*)?(approved?|approves|reject|rejected|rejects)\b`)
)

func verdictOf(word string) Verdict {
	if strings.HasPrefix(strings.ToLower(word), "approve") {
		return VerdictApprove
	}
	return VerdictReject
}

// plainLine strips what markdown puts around a verdict line.
func plainLine(s string) string {
	s = strings.TrimLeft(strings.TrimSpace(s), "#> \t")
	return strings.TrimSpace(strings.NewReplacer("**", "", "__", "", "`", "", "*", "").Replace(s))
}

// reasonsAfter is rest (what follows the verdict on line i) and every line
// after line i.
func reasonsAfter(lines []string, i int, rest string) string {
	out := strings.TrimSpace(strings.TrimLeft(rest, "_ \t:.,;—–-"))
	if tail := strings.TrimSpace(strings.Join(lines[i+1:], "\n")); tail != "" {
		if out != "" {
			out += "\n"
		}
		out += tail
	}
	return out
}

// ReviewInput is what a reviewer is asked to review: a finished plan's
// work, as the change in the working tree since the plan started.
type ReviewInput struct {
	// Plan names the plan; PlanPath is its file, relative to the project.
	Plan     string
	PlanPath string
	// Since is the commit the diff starts from (the plan's start_sha).
	Since string
	// Diff is `git diff` of the working tree against Since, new files
	// included; Cut is set when it was cut to fit.
	Diff string
	Cut  bool
}

// ReviewPrompt is the request a reviewer gets: the plan and the diff, and
// how to answer. The role's own prompt says what to look for.
func ReviewPrompt(reviewer string, in ReviewInput) string {
	var b strings.Builder
	what := "Review the work done for"
	if reviewer == Warp {
		what = "Audit the security of the work done for"
	}
	fmt.Fprintf(&b, "%s the plan %q (%s), which has just been completed.\n\n", what, in.Plan, in.PlanPath)
	fmt.Fprintf(&b, "Read the plan to know what was asked. The change is the working tree against commit %s; ", in.Since)
	fmt.Fprintf(&b, "`git diff %s` shows it (files not yet committed included below).\n\n", in.Since)
	if strings.TrimSpace(in.Diff) == "" {
		b.WriteString("The diff is empty: nothing changed in the working tree since that commit.\n\n")
	} else {
		b.WriteString("```diff\n")
		b.WriteString(strings.TrimRight(in.Diff, "\n"))
		b.WriteString("\n```\n\n")
		if in.Cut {
			fmt.Fprintf(&b, "The diff above was cut to fit; read the rest with `git diff %s` and the files themselves.\n\n", in.Since)
		}
	}
	b.WriteString("Answer with [APPROVE] or [REJECT] on the first line, then your reasons: for a rejection, the blocking issues as a numbered list.\n")
	return b.String()
}
