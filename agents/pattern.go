package agents

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// DefaultPlanFixes bounds how often Pattern is sent back to fix a plan that
// does not pass validation.
const DefaultPlanFixes = 3

// PatternAgent is Pattern: a model agent whose plans pass the validator
// before it reports done. Every plan in .weave/plans/ that the conversation
// created or changed is validated when the model finishes; errors and
// warnings go back to the model as a message, and it fixes the file, at most
// MaxFixes times. The check lives in the agent, so it holds whether Pattern
// is asked directly or delegated to.
type PatternAgent struct {
	Model ModelAgent
	// Project is the project root, which holds .weave/plans/; "" means the
	// working directory (a built-in plugin runs in its project).
	Project string
	// MaxFixes bounds the fix rounds; zero means DefaultPlanFixes.
	MaxFixes int
}

// Info describes Pattern as an agent plugin.
func (a PatternAgent) Info(ctx context.Context) (plugins.Info, error) { return a.Model.Info(ctx) }

// Handle runs Pattern on req.Prompt and validates the plans it wrote.
func (a PatternAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	project := a.Project
	if project == "" {
		project = "."
	}
	fixes := a.MaxFixes
	if fixes <= 0 {
		fixes = DefaultPlanFixes
	}
	before := PlanDigests(project)
	chat := a.Model.chat(req)
	resp, err := a.Model.converse(ctx, h, &chat)
	for round := 0; ; round++ {
		if err != nil || resp.Error != "" {
			return resp, err
		}
		written := ChangedPlans(project, before)
		bad := checkPlans(project, written)
		if len(bad) == 0 {
			if len(written) > 0 {
				resp.Output = strings.TrimRight(resp.Output, "\n") + "\n\n" + planSummary(project, written)
			}
			return resp, nil
		}
		if round == fixes {
			return plugins.AgentResponse{Output: resp.Output, Error: fmt.Sprintf(
				"pattern: %s still does not pass validation after %d attempts to fix it: %s; run `weave plan validate %s` to see every problem",
				bad[0].rel, fixes, bad[0].first(), strings.TrimSuffix(filepath.Base(bad[0].path), ".md"))}, nil
		}
		chat.Messages = append(chat.Messages, plugins.ChatMessage{Role: plugins.RoleUser, Content: fixPrompt(bad)})
		resp, err = a.Model.converse(ctx, h, &chat)
	}
}

// PlanDigests fingerprints every plan file of project, by path, so that
// ChangedPlans can tell which ones a conversation wrote.
func PlanDigests(project string) map[string][32]byte {
	out := map[string][32]byte{}
	paths, _ := filepath.Glob(filepath.Join(plans.PlansDir(project), "*.md"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			out[p] = sha256.Sum256(b)
		}
	}
	return out
}

// ChangedPlans lists the plans that are new or changed since before, in
// name order.
func ChangedPlans(project string, before map[string][32]byte) []string {
	var out []string
	for p, d := range PlanDigests(project) {
		if old, ok := before[p]; !ok || old != d {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// badPlan is a plan with validation findings.
type badPlan struct {
	path, rel string
	report    plans.Report
	loadErr   error
}

func (b badPlan) first() string {
	switch {
	case b.loadErr != nil:
		return b.loadErr.Error()
	case len(b.report.Errors) > 0:
		return b.report.Errors[0].String()
	case len(b.report.Warnings) > 0:
		return b.report.Warnings[0].String()
	}
	return "no problem"
}

func checkPlans(project string, paths []string) []badPlan {
	var out []badPlan
	for _, path := range paths {
		b := badPlan{path: path, rel: relTo(project, path)}
		p, err := plans.Load(path)
		if err != nil {
			b.loadErr = err
			out = append(out, b)
			continue
		}
		b.report = plans.Validate(project, p)
		if len(b.report.Errors)+len(b.report.Warnings) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// fixPrompt tells the model what the validator found.
func fixPrompt(bad []badPlan) string {
	var sb strings.Builder
	sb.WriteString("Weave validated the plan you wrote and it does not pass yet. Fix the file with `edit` (or rewrite it with `write`) so that every problem below is gone, keeping the Pattern template, then answer again.\n")
	for _, b := range bad {
		fmt.Fprintf(&sb, "\n%s:\n", b.rel)
		if b.loadErr != nil {
			fmt.Fprintf(&sb, "- error: %v\n", b.loadErr)
		}
		for _, e := range b.report.Errors {
			fmt.Fprintf(&sb, "- error: %s\n", e)
		}
		for _, w := range b.report.Warnings {
			fmt.Fprintf(&sb, "- warning: %s\n", w)
		}
	}
	return sb.String()
}

// planSummary says which plans passed, for whoever asked Pattern.
func planSummary(project string, paths []string) string {
	var lines []string
	for _, path := range paths {
		p, err := plans.Load(path)
		if err != nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("Weave validated %s: %s, no problems. Run it with `weave start-work %s`.",
			relTo(project, path), PlanLine(p), p.Name))
	}
	return strings.Join(lines, "\n")
}

// PlanLine summarises a plan in a few words: its title, task count and
// estimated effort.
func PlanLine(p *plans.Plan) string {
	n := len(p.Tasks)
	s := fmt.Sprintf("%d tasks", n)
	if n == 1 {
		s = "1 task"
	}
	if p.Title != "" {
		s = fmt.Sprintf("%q, %s", p.Title, s)
	}
	if e := strings.TrimSpace(p.Effort); e != "" {
		s += ", effort " + e
	}
	return s
}

func relTo(project, path string) string {
	abs, err := filepath.Abs(project)
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(abs, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

var _ plugins.Agent = PatternAgent{}
