package run

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/run/runtest"
	"github.com/weavehq/weave/plugins"
)

// everyEvent records every hook event it gets and nudges an idle agent on.
type everyEvent struct {
	mu    sync.Mutex
	names []string
}

func (*everyEvent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.every", Kind: plugins.KindHook, Events: slices.Clone(plugins.Events)}, nil
}

func (h *everyEvent) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	h.mu.Lock()
	h.names = append(h.names, ev.Name)
	h.mu.Unlock()
	if ev.Name == plugins.EventSessionIdle {
		return plugins.Decision{Action: plugins.Allow, Context: "go on"}, nil
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

// TestRunnerEvents ties IsRunEvent to what a run fires. The runner's fire
// sites (every plugins.Event literal in this package's code) name exactly
// runnerEvents; and a run that reaches each of them (an agent that goes idle
// once, then ticks its TODO through plan_check, and a Verification item)
// fires exactly the events IsRunEvent lists.
func TestRunnerEvents(t *testing.T) {
	t.Run("fire sites", func(t *testing.T) {
		listed, fired := runnerEventSites(t)
		slices.Sort(listed)
		slices.Sort(fired)
		if !slices.Equal(listed, slices.Compact(fired)) {
			t.Errorf("runnerEvents lists %v, but the runner fires %v", listed, slices.Compact(fired))
		}
	})
	t.Run("a run", func(t *testing.T) {
		body := plan(task(1, "Think", "", "")) + "\n## Verification\n\n- [ ] It reads well\n"
		project := runtest.NewProject(t, map[string]string{"p": body})
		h := &everyEvent{}
		info, _ := h.Info(context.Background())
		pipeline, err := hooks.NewPipeline([]hooks.Registered{{Hook: h, Info: info}}, hooks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Agent: &idleAgent{idle: 1}, Hooks: pipeline})
		if err != nil || res.Status != StatusDone {
			t.Fatalf("StartWork = %s %v %v, want done", res.Status, res.Err, err)
		}
		h.mu.Lock()
		got := slices.Compact(slices.Sorted(slices.Values(h.names)))
		h.mu.Unlock()
		var want []string
		for _, ev := range plugins.Events {
			if IsRunEvent(ev) {
				want = append(want, ev)
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("a run fired %v, IsRunEvent lists %v", got, want)
		}
	})
}

// runnerEventSites reads this package's code: the event names listed in
// runnerEvents, and the Name of every plugins.Event literal, by constant
// name.
func runnerEventSites(t *testing.T) (listed, fired []string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if len(n.Names) == 1 && n.Names[0].Name == "runnerEvents" && len(n.Values) == 1 {
					for _, el := range n.Values[0].(*ast.CompositeLit).Elts {
						listed = append(listed, selName(el))
					}
				}
			case *ast.CompositeLit:
				sel, ok := n.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Event" {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "plugins" {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok && selName(kv.Key) == "Name" {
						fired = append(fired, selName(kv.Value))
					}
				}
			}
			return true
		})
	}
	if len(listed) == 0 || len(fired) == 0 {
		t.Fatalf("found runnerEvents %v and fire sites %v; the reading of this package's code is broken", listed, fired)
	}
	return listed, fired
}

// selName is the selected name of x.Sel, or an identifier's name.
func selName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}
