package tools

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/plugins"
)

// claim is plan_check in a worker of a run with workers (Handed.Claim):
// the task handed over is checked, its verify blocks run in the worker's
// tree, and the claim is recorded; no checkbox changes, neither the
// worktree's copy of the plan nor the project's. The task is the one
// handed, as the run started with it: the worktree's files (a plan the
// model rewrote there, or none) play no part.
func (t *Tools) claim(ctx context.Context, c call, h *Handed, plan string) (plugins.ToolResult, error) {
	label := "task " + h.Task.Label()
	if plan != "" && !strings.EqualFold(plan, h.Plan) || !namesTask(c.args[argTask], h) {
		refusal := fmt.Sprintf("refused: you were handed %s of %s; plan_check ticks only that task", label, h.Plan)
		return plugins.ToolResult{Output: refusal, IsError: true, Denied: true, Reason: refusal}, nil
	}
	if !h.Runbook {
		if agents.RunsAsRunbook(h.Task) {
			refusal := fmt.Sprintf("refused: %s of %s is a runbook task: the runbook executor runs its blocks and ticks it, never a model", label, h.Plan)
			return plugins.ToolResult{Output: refusal, IsError: true, Denied: true, Reason: refusal}, nil
		}
		refusal, err := t.Verify(ctx, c.caller, c.session, h.Task)
		if err != nil {
			return plugins.ToolResult{}, err
		}
		if refusal != "" {
			return plugins.ToolResult{Output: refusal, IsError: true}, nil
		}
	}
	h.Claim()
	return ok("%s of %s passed its verify blocks here; the run commits your work, lands it on the plan's branch and ticks the task once its verify blocks pass there", label, h.Plan)
}

// namesTask reports whether raw (plan_check's task argument) names the
// task handed: its number (or position), or its title.
func namesTask(raw any, h *Handed) bool {
	switch v := raw.(type) {
	case string:
		v = strings.TrimSpace(v)
		if n, err := strconv.Atoi(v); err == nil {
			return n == h.Task.Ordinal() || (n == 0 && h.Task.Number == 0)
		}
		return strings.EqualFold(v, strings.TrimSpace(h.Task.Title))
	case nil:
		return false
	default:
		n, got, err := intArg(map[string]any{argTask: raw}, argTask)
		return err == nil && got && (n == h.Task.Ordinal() || (n == 0 && h.Task.Number == 0))
	}
}

// At returns tools like t rooted at dir, a worktree of the project where a
// worker of a run carries out a task: the same capability gate, hooks,
// config, permission rules, model, skills, MCP servers and budgets, with
// every path a tool reaches, and bash's sandbox, confined to dir. It owns
// no plan's checkboxes; its plan_check only claims (Handed.Claim).
// Delegation stays in dir too: a delegation that would leave this process
// (over the bus, to tools rooted elsewhere) is not offered. opts apply
// after what is taken from t (a worker's task on other code than the
// project's gives its own skills and model context).
func (t *Tools) At(dir string, opts ...Option) (*Tools, error) {
	n, err := New(dir, t.cfg, t.gate, t.pipeline)
	if err != nil {
		return nil, err
	}
	n.link, n.watch, n.model, n.publish, n.log, n.procs, n.mcp, n.skills, n.asker = t.link, t.watch, t.model, t.publish, t.log, t.procs, t.mcp, t.skills, t.asker
	// Whether bash can be sandboxed is the machine's answer, the same in
	// every worktree: t probes once for all the tools made from it (a
	// probe is a process, and a run's workers start at once).
	n.sb.probe, n.sb.notice = t.sandboxAvailable, t.sb.notice
	n.perms.policy = t.perms.policy
	n.web = t.web
	if d, ok := t.delegator.(*agentDelegator); ok {
		n.delegator = &agentDelegator{agent: d.agent, tools: n}
	}
	for _, o := range opts {
		o(n)
	}
	return n, nil
}
