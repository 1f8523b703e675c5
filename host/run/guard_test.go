package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/run/runtest"
	"github.com/weavehq/weave/plugins"
)

// brokenGuard is a tool.execute.before hook whose transport fails.
type brokenGuard struct{ calls int }

func (g *brokenGuard) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "guard", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore}}, nil
}

func (g *brokenGuard) Handle(context.Context, plugins.Event) (plugins.Decision, error) {
	g.calls++
	return plugins.Decision{}, errors.New("plugin died")
}

func TestStartWorkStopsWhenAClosedHookFails(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "One", "touch one", ""), task(2, "Two", "touch two", ""))})
	cfg := config.Default()
	cfg.Runbook.Retries = 3
	var mu sync.Mutex
	var halt error
	guard := &brokenGuard{}
	info, _ := guard.Info(context.Background())
	pipeline, err := hooks.NewPipeline([]hooks.Registered{{Hook: guard, Info: info}}, hooks.Options{
		OnFailClosed: func(ev plugins.Event, rep hooks.Report) {
			mu.Lock()
			defer mu.Unlock()
			if halt == nil {
				halt = fmt.Errorf("hook %s failed: %s", rep.Hook, rep.Error)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg, Hooks: pipeline, Observe: rec.observe,
		Halted: func() error { mu.Lock(); defer mu.Unlock(); return halt }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "hook guard failed: plugin died") {
		t.Fatalf("StartWork = %s (%v), want failed naming the hook and its failure", res.Status, res.Err)
	}
	if guard.calls != 1 {
		t.Errorf("the guard was asked %d times, want 1: no retry goes past a failed guard", guard.calls)
	}
	if got := readPlan(t, project, "p"); strings.Contains(got, "[x]") {
		t.Errorf("a task was ticked past a failed guard:\n%s", got)
	}
}
