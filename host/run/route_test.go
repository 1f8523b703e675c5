package run

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/run/runtest"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// routedAgent records the tasks it is given and ticks them, as a model
// does once the work is done.
type routedAgent struct {
	mu    sync.Mutex
	tasks []string
}

func (a *routedAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "routed", Kind: plugins.KindAgent}, nil
}

func (a *routedAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	a.mu.Lock()
	a.tasks = append(a.tasks, req.Task.Title)
	a.mu.Unlock()
	return tick(ctx, h, req)
}

// TestRouteGivesCategoryTasksToTheirAgent: a routed task is carried out by
// the router's agent (a model task) or as its role (a runbook task), whose
// tool calls pass the gate as that role; the others stay with Tapestry.
func TestRouteGivesCategoryTasksToTheirAgent(t *testing.T) {
	body := plan(
		task(1, "Plain", "echo one > a.txt", "test -f a.txt"),
		task(2, "Styled [category: frontend]", "", ""),
		task(3, "Built [category: frontend]", "echo two > b.txt", "test -f b.txt"),
	)
	project := runtest.NewProject(t, map[string]string{"p": body})
	cfg := config.Default()
	// Only bash and plan_check: the run must call as shuttle-frontend for
	// the runbook to pass the gate with this row.
	cfg.Categories = map[string]config.CategoryConfig{"frontend": {Tools: []string{"bash", "plan_check"}}}
	routed := &routedAgent{}
	var seen []plans.Task
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg,
		Route: func(t plans.Task) (string, plugins.Agent, bool) {
			seen = append(seen, t)
			if t.Category != "frontend" {
				return "", nil, false
			}
			return agents.CategoryAgent(t.Category), routed, true
		}})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %s, %v (%v), want done", res.Status, err, res.Err)
	}
	if len(seen) != 3 || strings.Join(routed.tasks, ",") != "Styled" {
		t.Errorf("router saw %d tasks, routed agent ran %v; want all asked and only the model task Styled handed to it", len(seen), routed.tasks)
	}
	if got := readPlan(t, project, "p"); strings.Count(got, "- [x]") != 3 {
		t.Errorf("plan after run:\n%s", got)
	}

	// A row without bash refuses the routed task's blocks: the caller is
	// the category's Shuttle, not Tapestry.
	runtest.WritePlan(t, project, "p", body)
	cfg.Categories = map[string]config.CategoryConfig{"frontend": {Tools: []string{"read", "plan_check"}}}
	res, err = StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg,
		Route: func(t plans.Task) (string, plugins.Agent, bool) {
			return agents.CategoryAgent(t.Category), routed, t.Category != ""
		}})
	if err != nil || res.Status != StatusFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "shuttle-frontend") {
		t.Errorf("StartWork with a row without bash = %s, %v (%v); want failed, naming shuttle-frontend", res.Status, err, res.Err)
	}
}

// The run names the agents whose plugins its open tasks need, once it
// knows the plan: none for runbook tasks, which it runs itself, and the
// category's Shuttle for a routed model task.
func TestWarmNamesTheAgentsTheTasksNeed(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
		want string
	}{
		{"runbook", plan(task(1, "Build", "true", "true")) + "\n## Verification\n\n- [ ] It builds\n  ```sh verify\n  true\n  ```\n", ""},
		{"verify-only task", plan(task(1, "Check by hand", "", "true")), "tapestry"},
		{"prose", plan(task(1, "Build", "true", ""), task(2, "Write it", "", "")), "tapestry"},
		{"routed", plan(task(1, "Style [category: frontend]", "", ""), task(2, "Write it", "", "")), "shuttle-frontend,tapestry"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			project := runtest.NewProject(t, map[string]string{"p": tt.body})
			var warmed []string
			_, err := StartWork(context.Background(), Options{Project: project, Name: "p", Agent: &tickingAgent{},
				Route: func(t plans.Task) (string, plugins.Agent, bool) {
					return agents.CategoryAgent(t.Category), &tickingAgent{}, t.Category != ""
				},
				Warm: func(roles ...string) { warmed = append(warmed, roles...) }})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(warmed, ","); got != tt.want {
				t.Errorf("warmed %q, want %q", got, tt.want)
			}
		})
	}
}
