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
	return tick(ctx, h, req)
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

// todosHook records the plan events it gets and says something for the
// model when the TODOs are done.
type todosHook struct {
	mu     sync.Mutex
	events []plugins.Event
}

func (*todosHook) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.todos", Kind: plugins.KindHook, Events: []string{plugins.EventPlanTaskDone, plugins.EventPlanTodosDone}}, nil
}

func (h *todosHook) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
	if ev.Name == plugins.EventPlanTodosDone {
		return plugins.Decision{Action: plugins.Allow, Context: "NOW VERIFY"}, nil
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

// plan.todos.done fires once, when the last TODO is ticked, with the counts
// of the plan's sections; what it says for the model goes with the prompt
// of the first Verification item.
func TestTodosDoneFiresOnceAtTheLastTodo(t *testing.T) {
	body := plan(task(1, "One", "true", ""), task(2, "Two", "true", "")) + "\n## Verification\n\n- [ ] The output reads well\n"
	project := runtest.NewProject(t, map[string]string{"p": body})
	h := &todosHook{}
	info, _ := h.Info(context.Background())
	pipeline, err := hooks.NewPipeline([]hooks.Registered{{Hook: h, Info: info}}, hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &tickingAgent{}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Agent: a, Hooks: pipeline})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %s %v %v, want done", res.Status, res.Err, err)
	}
	var names []string
	var todos plugins.Event
	for _, ev := range h.events {
		names = append(names, ev.Name)
		if ev.Name == plugins.EventPlanTodosDone {
			todos = ev
		}
	}
	want := "plan.task.done,plan.task.done,plan.todos.done,plan.task.done"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("plan events = %s, want %s", got, want)
	}
	if todos.Plan != "p" || todos.Data["todos"] != 2 || todos.Data["verification"] != 1 || todos.Data["completed"] != 2 || todos.Data["total"] != 3 {
		t.Errorf("plan.todos.done = %+v, want plan p with 2 TODOs done and 1 Verification item open", todos)
	}
	if len(a.reqs) != 1 || !strings.Contains(a.reqs[0].Prompt, "<system-reminder>\nNOW VERIFY\n</system-reminder>") {
		t.Errorf("requests = %+v, want the Verification item's prompt with the hook's text", a.reqs)
	}
}
