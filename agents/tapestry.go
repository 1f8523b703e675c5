package agents

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// TapestryAgent is Tapestry as an agent plugin. It carries out plan tasks
// directly; it never delegates. A task that carries work blocks (sh or bash
// blocks that are not verify blocks) runs as a runbook (RunRunbook), without
// a model; so does an item of the plan's Verification checklist that has
// verify blocks. Any other task (prose, or only verify blocks) is the
// model's: Tapestry's model loop does the work with its tools and ticks the
// task with plan_check, and the task's verify blocks gate that tick. Without
// a model, a prose task reports ErrNeedsModel, and a task with verify blocks
// runs them as a runbook.
//
// The zero value has no model and reads the plan afresh for every task;
// NewTapestryAgent keeps the last plan it read, which costs no parse again
// when only its checkboxes changed.
type TapestryAgent struct {
	mu   sync.Mutex
	last *plans.Plan
	// model thinks for the model tasks; nil means none.
	model *ModelAgent
}

// NewTapestryAgent returns Tapestry without a model, keeping the plan it
// last read.
func NewTapestryAgent() *TapestryAgent { return &TapestryAgent{} }

// NewModelTapestry returns Tapestry thinking with m for the tasks that
// need a model.
func NewModelTapestry(m ModelAgent) *TapestryAgent { return &TapestryAgent{model: &m} }

// Info describes Tapestry as an agent plugin.
func (*TapestryAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: AgentID(Tapestry), Version: "1", Kind: plugins.KindAgent, Role: Tapestry}, nil
}

// Handle carries out the task req names (req.Plan, req.Task). For a model
// task, req.Prompt is what the model is told (TaskRequest's prompt, or a
// continuation prompt) and req.History the conversation it continues. The
// response is Done only when the task is ticked in the plan file; a model
// that ends its turn with the task unticked answers not Done, and the host
// may nudge it on.
func (a *TapestryAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	if req.Plan == "" || req.Task == nil {
		return plugins.AgentResponse{Error: "tapestry carries out plan tasks: the request names no plan file and task"}, nil
	}
	name, t, errMsg := a.task(req.Plan, plans.Task{Number: req.Task.Number, Title: req.Task.Title})
	if errMsg != "" {
		return plugins.AgentResponse{Error: errMsg}, nil
	}
	if RunsAsRunbook(t) {
		return RunTask(ctx, h, name, t)
	}
	if a.model == nil {
		return a.withoutModel(ctx, h, name, t)
	}
	if t.Done {
		return plugins.AgentResponse{Output: fmt.Sprintf("task %s is ticked already", t.Label()), Done: true}, nil
	}
	mh := &modelTaskHost{Host: h}
	resp, err := a.model.Handle(ctx, mh, req)
	if err != nil {
		return resp, err
	}
	if mh.noModel {
		return a.withoutModel(ctx, h, name, t)
	}
	if resp.Error != "" || !resp.Done {
		return resp, nil
	}
	// The model ended its turn: the task is done only if it is ticked.
	np, err := plans.Load(req.Plan)
	if err != nil {
		return plugins.AgentResponse{Error: fmt.Sprintf("read the plan: %v", err)}, nil
	}
	if cur, ok := np.Lookup(t); !ok || !cur.Done {
		resp.Done = false
	}
	return resp, nil
}

// task reads the plan at path (again from the last one read when it is the
// same file) and returns its name and its task ref, or why it cannot.
func (a *TapestryAgent) task(path string, ref plans.Task) (string, plans.Task, string) {
	// The plan is Tapestry's own and read under the lock only, so it is
	// brought up to date in place: a tick elsewhere costs a read of the file
	// and a compare, not a copy of every task. What leaves the lock is a
	// copy of the task.
	a.mu.Lock()
	defer a.mu.Unlock()
	var p *plans.Plan
	var err error
	if a.last != nil && a.last.Path == path {
		p, err = plans.Refresh(a.last)
	} else {
		p, err = plans.Load(path)
	}
	if err != nil {
		a.last = nil
		return "", plans.Task{}, fmt.Sprintf("read the plan: %v", err)
	}
	a.last = p
	t, ok := p.Lookup(ref)
	if !ok {
		return "", plans.Task{}, fmt.Sprintf("task %s is not in %s", plans.TaskLabel(ref.Number, ref.Title), path)
	}
	return p.Name, t, ""
}

// RunsAsRunbook reports whether Tapestry carries out t as a runbook, without
// a model: a task with work blocks, or a Verification item with verify
// blocks.
func RunsAsRunbook(t plans.Task) bool {
	return t.HasWork() || t.Verification && len(t.VerifyBlocks()) > 0
}

// RunTask carries out task t of plan (its name) as a runbook through h
// (RunRunbook), whoever calls it: Tapestry's plugin, or the host running
// the runbook executor as Tapestry.
func RunTask(ctx context.Context, h plugins.Host, plan string, t plans.Task) (plugins.AgentResponse, error) {
	scripts, err := RunbookScripts(t)
	if err != nil {
		return plugins.AgentResponse{Error: err.Error()}, nil
	}
	return RunRunbook(ctx, h, TaskPayload{Plan: plan, Number: t.Number, Title: t.Title, Scripts: scripts})
}

// withoutModel carries out a model task when there is no model: a task
// with verify blocks is ticked through plan_check, the host's tick door,
// which runs them (a person may have done the work; they run there only,
// once), and their failure says that the task needs a model; any other
// task needs one.
func (a *TapestryAgent) withoutModel(ctx context.Context, h plugins.Host, plan string, t plans.Task) (plugins.AgentResponse, error) {
	if len(t.VerifyBlocks()) == 0 {
		// The run names the task; the error says only what it lacks.
		return plugins.AgentResponse{Error: fmt.Sprintf("no sh or bash blocks to run: %v", ErrNeedsModel)}, nil
	}
	ref := any(t.Title)
	if t.Number > 0 {
		ref = t.Number
	}
	res, err := h.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolPlanCheck, Args: map[string]any{"plan": plan, "task": ref}})
	if err != nil {
		return plugins.AgentResponse{}, err
	}
	if res.IsError {
		resp := plugins.AgentResponse{Error: fmt.Sprintf("%s, and it has no sh or bash work blocks: %v", strings.TrimRight(res.Output, "\n"), ErrNeedsModel)}
		if res.Denied && res.BlockedBy != "" {
			resp.BlockedBy = res.BlockedBy
		}
		return resp, nil
	}
	return plugins.AgentResponse{Output: res.Output, Done: true}, nil
}

var _ plugins.Agent = (*TapestryAgent)(nil)
