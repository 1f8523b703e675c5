package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// Script is one shell block of a runbook task.
type Script struct {
	// Lang is the block's language ("sh" or "bash"); it picks the shell.
	Lang string `json:"lang"`
	// Code is the block's text.
	Code string `json:"code"`
	// Verify marks a block that checks the task's effect.
	Verify bool `json:"verify,omitempty"`
	// Line is the block's line in the plan file, for messages.
	Line int `json:"line"`
}

// TaskPayload is a runbook task as RunRunbook carries it out.
type TaskPayload struct {
	// Plan is the plan's name in .weave/plans.
	Plan   string `json:"plan"`
	Number int    `json:"number,omitempty"`
	Title  string `json:"title"`
	// Scripts are the task's shell blocks in the order they run; empty for a
	// task only a model can do.
	Scripts []Script `json:"scripts,omitempty"`
}

// ErrNeedsModel reports a task that has no shell blocks, which only an agent
// with a model can carry out.
var ErrNeedsModel = errors.New("needs an agent model")

// HookBlockError reports work a hook blocked: a decision of the project's
// rules, not a failure, so it is not retried. Its message reads
// "blocked by <hook>: <reason>".
type HookBlockError struct {
	// Hook names the hook that blocked.
	Hook string
	Msg  string
}

func (e *HookBlockError) Error() string { return e.Msg }

// hookBlock describes the shell block at line that hook blocked for reason.
func hookBlock(hook, reason string, line int) *HookBlockError {
	if reason == "" {
		reason = "no reason given"
	}
	return &HookBlockError{Hook: hook, Msg: fmt.Sprintf("blocked by %s: %s (block at line %d)", hook, reason, line)}
}

// BlockError reports a block that exited non-zero.
type BlockError struct {
	Line     int
	Verify   bool
	ExitCode int
}

func (e *BlockError) Error() string {
	kind := "block"
	if e.Verify {
		kind = "verify block"
	}
	return fmt.Sprintf("%s at line %d exited with status %d", kind, e.Line, e.ExitCode)
}

// RunbookScripts returns a task's shell blocks in the order the runbook runs
// them: the work blocks in document order, then the verify blocks. It returns
// ErrNeedsModel when the task has no shell block at all.
func RunbookScripts(t plans.Task) ([]Script, error) {
	var work, verify []Script
	for _, b := range t.Blocks {
		if !b.IsShell() {
			continue
		}
		s := Script{Lang: b.Shell(), Code: b.Code, Verify: b.IsVerify(), Line: b.Line}
		if s.Verify {
			verify = append(verify, s)
		} else {
			work = append(work, s)
		}
	}
	if len(work)+len(verify) == 0 {
		// Callers name the task; the error says only what it lacks.
		return nil, fmt.Errorf("no sh or bash blocks to run: %w", ErrNeedsModel)
	}
	return append(work, verify...), nil
}

// TaskRequest asks Tapestry to carry out task t of plan p. The request
// names the plan file and the task; Tapestry reads the task's blocks from
// the plan itself. The prompt is what Tapestry's model is told for a task
// it carries out (TaskPrompt).
func TaskRequest(session string, p *plans.Plan, t plans.Task) plugins.AgentRequest {
	return plugins.AgentRequest{
		SessionID: session,
		Prompt:    TaskPrompt(p, t),
		Plan:      p.Path,
		Task:      &plugins.TaskRef{Number: t.Number, Title: t.Title},
	}
}

// maxTaskText bounds the task's text quoted in a prompt.
const maxTaskText = 16 << 10

// TaskPrompt tells Tapestry's model to carry out task t of plan p: the
// task as written, what "done" means, and how to tick it.
func TaskPrompt(p *plans.Plan, t plans.Task) string {
	text := ""
	if t.Start >= 0 && t.End <= len(p.Src) && t.Start < t.End {
		text = strings.TrimRight(string(p.Src[t.Start:t.End]), "\n")
	}
	if len(text) > maxTaskText {
		text = text[:maxTaskText] + "\n[… the rest is in the plan file]"
	}
	var ref any = t.Title
	if t.Number > 0 {
		ref = t.Number
	}
	args, _ := json.Marshal(map[string]any{"plan": p.Name, "task": ref})
	var b strings.Builder
	file := layout.PlanShown(p.Name)
	if t.Verification {
		fmt.Fprintf(&b, "Check this item of the Verification checklist of plan %s (%s), the plan's final gate:\n\n%s\n\n", p.Name, file, text)
		b.WriteString("Run the check it describes with your tools and read the result. If it holds, tick it. If it does not, fix the cause, check again, then tick it.")
	} else {
		fmt.Fprintf(&b, "Carry out task %s of plan %s (%s):\n\n%s\n\n", t.Label(), p.Name, file, text)
		b.WriteString("Read what the task needs (the plan's Context helps), do the work with your tools, then check it against its Acceptance.")
	}
	fmt.Fprintf(&b, " Tick it with plan_check %s once it demonstrably holds.", args)
	if len(t.VerifyBlocks()) > 0 {
		b.WriteString(" Its sh verify blocks run when you tick: a failing one refuses the tick and says why.")
	}
	b.WriteString(" Work on this task only; the next one comes after it is ticked.")
	return b.String()
}

// ResponseError turns a failed response's message back into an error: a
// hook's block (resp.BlockedBy) is a *HookBlockError, and a task that needs
// a model stays recognisable as one (ErrNeedsModel).
func ResponseError(resp plugins.AgentResponse) error {
	msg := resp.Error
	if resp.BlockedBy != "" {
		return &HookBlockError{Hook: resp.BlockedBy, Msg: msg}
	}
	if rest, ok := strings.CutSuffix(msg, ": "+ErrNeedsModel.Error()); ok {
		return fmt.Errorf("%s: %w", rest, ErrNeedsModel)
	}
	return errors.New(msg)
}

// RunRunbook carries out a runbook task through the host: every block runs
// through the host's bash tool (so the capability gate and the tool hooks see
// it), work blocks first, then verify blocks, each of which must exit 0; then
// the task is ticked with the plan_check tool. A failure is a domain error in
// the response; a Go error means the host could not be reached.
func RunRunbook(ctx context.Context, h plugins.Host, task TaskPayload) (plugins.AgentResponse, error) {
	for _, s := range task.Scripts {
		res, err := h.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolBash, Args: map[string]any{
			"command": s.Code,
			"shell":   s.Lang,
			"errexit": true,
		}})
		if err != nil {
			return plugins.AgentResponse{}, err
		}
		switch {
		case res.Denied && res.BlockedBy != "":
			return plugins.AgentResponse{Error: hookBlock(res.BlockedBy, res.Reason, s.Line).Error(), BlockedBy: res.BlockedBy}, nil
		case res.Denied:
			why := res.Reason
			if why == "" {
				why = res.Output
			}
			return plugins.AgentResponse{Error: fmt.Sprintf("block at line %d was not allowed to run: %s", s.Line, why)}, nil
		case res.ExitCode > 0:
			return plugins.AgentResponse{Error: (&BlockError{Line: s.Line, Verify: s.Verify, ExitCode: res.ExitCode}).Error()}, nil
		case res.IsError:
			// A timeout (exit code -1) or a failure to run: the tool's last
			// line says which.
			return plugins.AgentResponse{Error: fmt.Sprintf("block at line %d failed: %s", s.Line, lastLine(res.Output))}, nil
		}
	}
	ref := any(task.Title)
	if task.Number > 0 {
		ref = task.Number
	}
	res, err := h.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolPlanCheck, Args: map[string]any{"plan": task.Plan, "task": ref}})
	if err != nil {
		return plugins.AgentResponse{}, err
	}
	if res.IsError {
		return plugins.AgentResponse{Error: "tick the task: " + res.Output}, nil
	}
	return plugins.AgentResponse{Output: res.Output, Done: true}, nil
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n ")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
