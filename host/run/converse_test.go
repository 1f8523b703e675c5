package run

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/run/runtest"
	"github.com/weavehq/weave/plugins"
)

// tickingAgent ticks every task it is given, recording the requests.
type tickingAgent struct {
	mu   sync.Mutex
	reqs []plugins.AgentRequest
}

func (a *tickingAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.ticking", Kind: plugins.KindAgent}, nil
}

func (a *tickingAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	res, err := h.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolPlanCheck, Args: map[string]any{"task": req.Task.Number}})
	if err != nil || res.IsError {
		return plugins.AgentResponse{Error: "tick: " + res.Output}, err
	}
	return plugins.AgentResponse{Done: true}, nil
}

// remindOnDone adds context for the model on every plan.task.done.
type remindOnDone struct{}

func (remindOnDone) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.remind", Kind: plugins.KindHook, Events: []string{plugins.EventPlanTaskDone}}, nil
}

func (remindOnDone) Handle(context.Context, plugins.Event) (plugins.Decision, error) {
	return plugins.Decision{Action: plugins.Allow, Context: "REMINDER FOR THE MODEL"}, nil
}

// What hooks say for the model on plan.task.done goes with Tapestry's next
// prompt, never to the run's events; prose tasks continue the session's
// conversation.
func TestHookContextGoesToTheModel(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Think", "", ""), task(2, "Think more", "", ""))})
	info, _ := remindOnDone{}.Info(context.Background())
	pipeline, err := hooks.NewPipeline([]hooks.Registered{{Hook: remindOnDone{}, Info: info}}, hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &tickingAgent{}
	rec := &recorder{}
	conv := []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "earlier"}, {Role: plugins.RoleAssistant, Content: "answer"}}
	var asked []string
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Agent: a, Hooks: pipeline, Observe: rec.observe,
		History: func(_ context.Context, session, agent string) ([]plugins.ChatMessage, error) {
			asked = append(asked, agent)
			return conv, nil
		}})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %s %v %v, want done", res.Status, res.Err, err)
	}
	if len(a.reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(a.reqs))
	}
	if strings.Contains(a.reqs[0].Prompt, "REMINDER") || !strings.Contains(a.reqs[1].Prompt, "<system-reminder>\nREMINDER FOR THE MODEL\n</system-reminder>") {
		t.Errorf("prompts = %q, %q; want the reminder with the second only", a.reqs[0].Prompt, a.reqs[1].Prompt)
	}
	if !strings.Contains(a.reqs[1].Prompt, "Carry out task 2 (Think more)") {
		t.Errorf("second prompt = %q, want the task's prompt", a.reqs[1].Prompt)
	}
	for _, r := range a.reqs {
		if len(r.History) != 2 {
			t.Errorf("request history = %v, want the session's conversation", r.History)
		}
	}
	if strings.Join(asked, ",") != "tapestry,tapestry" {
		t.Errorf("history asked for %v, want tapestry's, once a task", asked)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, ev := range rec.events {
		if strings.Contains(ev.Reason+ev.Output, "REMINDER") {
			t.Errorf("event %+v carries text for the model", ev)
		}
	}
}
