package hooks

import (
	"github.com/weavehq/weave/internal/realpath"
	"github.com/weavehq/weave/internal/safefile"

	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/weavehq/weave/plugins"
)

// RulesInjectorID names the rules injector.
const RulesInjectorID = "weave.rules-injector"

// rulesFileNames are the rules files looked for, in this order within a
// directory.
var rulesFileNames = []string{"AGENTS.md", "CLAUDE.md", ".rules"}

// maxRulesSize caps how much of one rules file is injected.
const maxRulesSize = 64 << 10

// RulesInjector adds project rules to an agent's context: after a successful
// read, the rules files (AGENTS.md, CLAUDE.md, .rules) of the nearest
// directory holding any, from the read file's directory up to the project
// root, are added, each rules file once per session.
type RulesInjector struct {
	project string
	mu      sync.Mutex
	sent    map[string]map[string]bool // session -> rules file -> injected
}

// NewRulesInjector returns the injector; project is used when an event has
// no cwd.
func NewRulesInjector(project string) *RulesInjector {
	return &RulesInjector{project: project, sent: make(map[string]map[string]bool)}
}

func (h *RulesInjector) info() plugins.Info {
	info := builtinInfo(RulesInjectorID, PriorityContext, plugins.EventToolExecuteAfter, plugins.EventSessionEnd)
	info.Tools = map[string][]string{plugins.EventToolExecuteAfter: {plugins.ToolRead}}
	return info
}

func (h *RulesInjector) registered() Registered { return builtinRegistered(h, h.info(), FailDefault) }

// Info describes the hook.
func (h *RulesInjector) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// Handle injects rules after a read.
func (h *RulesInjector) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Name == plugins.EventSessionEnd {
		h.mu.Lock()
		delete(h.sent, ev.SessionID)
		h.mu.Unlock()
		return allow, nil
	}
	if ev.Tool != plugins.ToolRead || (ev.Result != nil && (ev.Result.IsError || ev.Result.Denied)) {
		return allow, nil
	}
	p, ok := plugins.ToolPath(ev.Args)
	if !ok {
		return allow, nil
	}
	project, err := projectDir(ev, h.project)
	if err != nil {
		return plugins.Decision{}, err
	}
	root, err := realpath.Resolve("", project)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("resolve project directory: %w", err)
	}
	real, err := realpath.Resolve(project, p)
	if err != nil || !realpath.Within(root, real) {
		return allow, nil // rules belong to the project; outside it there are none
	}
	files, err := nearestRules(root, filepath.Dir(real))
	if err != nil {
		return plugins.Decision{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var parts []string
	for _, f := range files {
		if h.sent[ev.SessionID][f] {
			continue
		}
		text, err := readCapped(f, maxRulesSize)
		if err != nil {
			return plugins.Decision{}, err
		}
		if h.sent[ev.SessionID] == nil {
			h.sent[ev.SessionID] = make(map[string]bool)
		}
		h.sent[ev.SessionID][f] = true
		rel, _ := filepath.Rel(root, f)
		parts = append(parts, fmt.Sprintf("Rules from %s (apply them to work in %s):\n%s", rel, filepath.Dir(rel), text))
	}
	if len(parts) == 0 {
		return allow, nil
	}
	return withContext(strings.Join(parts, "\n\n")), nil
}

// nearestRules returns the rules files of the nearest directory, from dir up
// to root, that holds any.
func nearestRules(root, dir string) ([]string, error) {
	for {
		var found []string
		for _, n := range rulesFileNames {
			f := filepath.Join(dir, n)
			fi, err := os.Stat(f)
			if err == nil && fi.Mode().IsRegular() {
				found = append(found, f)
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("look for rules: %w", err)
			}
		}
		if len(found) > 0 {
			return found, nil
		}
		if dir == root || !realpath.Within(root, dir) {
			return nil, nil
		}
		dir = filepath.Dir(dir)
	}
}

func readCapped(path string, limit int64) (string, error) {
	// Opening never blocks on a named pipe, and only a regular file is read.
	f, err := safefile.Open(path)
	if err != nil {
		return "", fmt.Errorf("read rules: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", fmt.Errorf("read rules %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return string(b[:limit]) + "\n[truncated]", nil
	}
	return string(b), nil
}

var _ plugins.Hook = (*RulesInjector)(nil)
