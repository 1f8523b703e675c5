package agents

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/weavehq/weave/plans"
)

// Script is one shell block to run for a task.
type Script struct {
	// Lang is the block's language ("sh" or "bash"); it picks the shell.
	Lang string
	// Code is the block's text.
	Code string
	// Verify marks a block that checks the task's effect.
	Verify bool
	// Line is the block's line in the plan file, for messages.
	Line int
}

// ScriptResult is how a script ended.
type ScriptResult struct {
	ExitCode int
}

// Shell runs scripts for the runbook executor. The host implements it and
// decides where scripts may run; output is streamed to out as it comes.
type Shell interface {
	RunScript(ctx context.Context, s Script, out io.Writer) (ScriptResult, error)
}

// ErrNeedsModel reports a task that has no shell blocks, which only an agent
// with a model can carry out.
var ErrNeedsModel = errors.New("needs an agent model")

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
		s := Script{Lang: b.Lang, Code: b.Code, Verify: b.IsVerify(), Line: b.Line}
		if s.Verify {
			verify = append(verify, s)
		} else {
			work = append(work, s)
		}
	}
	if len(work)+len(verify) == 0 {
		return nil, fmt.Errorf("task %s has no sh or bash blocks: %w", taskLabel(t), ErrNeedsModel)
	}
	return append(work, verify...), nil
}

// RunTask executes one plan task the runbook way: every work block, then
// every verify block, each of which must exit 0. It stops at the first block
// that fails. The caller ticks the task when RunTask returns nil.
func RunTask(ctx context.Context, sh Shell, t plans.Task, out io.Writer) error {
	scripts, err := RunbookScripts(t)
	if err != nil {
		return err
	}
	for _, s := range scripts {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(out, "$ %s\n", firstLine(s.Code))
		res, err := sh.RunScript(ctx, s, out)
		if err != nil {
			return fmt.Errorf("run block at line %d: %w", s.Line, err)
		}
		if res.ExitCode != 0 {
			return &BlockError{Line: s.Line, Verify: s.Verify, ExitCode: res.ExitCode}
		}
	}
	return nil
}

func taskLabel(t plans.Task) string {
	if t.Number > 0 {
		return fmt.Sprintf("%d (%q)", t.Number, t.Title)
	}
	return fmt.Sprintf("%q", t.Title)
}

func firstLine(code string) string {
	code = strings.TrimSpace(code)
	if i := strings.IndexByte(code, '\n'); i >= 0 {
		return code[:i] + " …"
	}
	return code
}
