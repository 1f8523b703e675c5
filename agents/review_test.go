package agents

import (
	"strings"
	"testing"
)

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		name, answer string
		want         Verdict
		reasons      string
	}{
		{"plain approve", "[APPROVE] Tests pass.", VerdictApprove, "Tests pass."},
		{"plain reject with list", "[REJECT]\n1. Missing CSRF protection\n2. No rate limiting", VerdictReject, "1. Missing CSRF protection\n2. No rate limiting"},
		{"bold", "**[REJECT]** the build is broken", VerdictReject, "the build is broken"},
		{"bold inside brackets", "[**APPROVE**]: fine", VerdictApprove, "fine"},
		{"leading spaces and lower case", "   [approve] looks good", VerdictApprove, "looks good"},
		{"heading", "## [Reject]\n- no tests", VerdictReject, "- no tests"},
		{"spaces inside brackets", "[ REJECT ] no", VerdictReject, "no"},
		{"label", "Verdict: **[APPROVE]**", VerdictApprove, ""},
		{"preamble line", "Here is my review.\n\n[REJECT]\n1. broken", VerdictReject, "1. broken"},
		{"code ticks", "`[REJECT]` - leaks the key", VerdictReject, "leaks the key"},
		{"bare word", "Rejected: the migration is missing", VerdictReject, "the migration is missing"},
		{"bare word bold", "**APPROVE** — sound", VerdictApprove, "sound"},
		{"crlf", "[REJECT]\r\n1. x\r\n", VerdictReject, "1. x"},
		{"both on one line", "[APPROVE] or [REJECT]? hard to say", VerdictNone, "[APPROVE] or [REJECT]? hard to say"},
		{"none", "I could not decide.", VerdictNone, "I could not decide."},
		{"word later on the first line", "I would approve this", VerdictNone, "I would approve this"},
		{"approvals is not approve", "Approvals are needed", VerdictNone, "Approvals are needed"},
		{"empty", "  \n ", VerdictNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, reasons := ParseVerdict(tt.answer)
			if v != tt.want || reasons != tt.reasons {
				t.Errorf("ParseVerdict(%q) = %q, %q; want %q, %q", tt.answer, v, reasons, tt.want, tt.reasons)
			}
		})
	}
}

func TestReviewApprovedAndSummary(t *testing.T) {
	ok := NewReview(Weft, "[APPROVE] Sound.\nOptional: rename x.")
	if !ok.Approved() || ok.Summary() != "weft [APPROVE] Sound." {
		t.Errorf("approve: Approved() = %v, Summary() = %q", ok.Approved(), ok.Summary())
	}
	no := NewReview(Warp, "[REJECT]\n1. high: shell injection at run.go:12")
	if no.Approved() || no.Summary() != "warp [REJECT] 1. high: shell injection at run.go:12" {
		t.Errorf("reject: Approved() = %v, Summary() = %q", no.Approved(), no.Summary())
	}
	none := NewReview(Weft, "Looks fine to me")
	if none.Approved() || !strings.Contains(none.Summary(), "gave no verdict") {
		t.Errorf("no verdict: Approved() = %v, Summary() = %q", none.Approved(), none.Summary())
	}
	failed := Review{Reviewer: Warp, Verdict: VerdictNone, Error: "no model configured"}
	if failed.Approved() || failed.Summary() != "warp could not review: no model configured" {
		t.Errorf("error: Approved() = %v, Summary() = %q", failed.Approved(), failed.Summary())
	}
}

func TestReviewPrompt(t *testing.T) {
	in := ReviewInput{Plan: "auth", PlanPath: ".weave/plans/auth.md", Since: "abc123", Diff: "+new line\n", Cut: true}
	p := ReviewPrompt(Weft, in)
	for _, want := range []string{`"auth"`, ".weave/plans/auth.md", "git diff abc123", "+new line", "cut to fit", "[APPROVE] or [REJECT]"} {
		if !strings.Contains(p, want) {
			t.Errorf("ReviewPrompt lacks %q:\n%s", want, p)
		}
	}
	if p := ReviewPrompt(Warp, ReviewInput{Plan: "auth", Since: "abc"}); !strings.Contains(p, "security") || !strings.Contains(p, "diff is empty") {
		t.Errorf("warp's prompt on an empty diff:\n%s", p)
	}
}
