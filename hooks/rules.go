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
	"slices"
	"strings"
	"sync"

	"github.com/weavehq/weave/plugins"
)

// RulesInjectorID names the rules injector.
const RulesInjectorID = "weave.rules-injector"

// defaultRulesFiles are the instruction file names looked for in a
// directory when config names none, the first found winning.
var defaultRulesFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxRulesSize caps how much of one rules file is injected.
const maxRulesSize = 64 << 10

// rulesTools are the calls that touch a file: reading, writing or editing
// one under a folder brings in that folder's instructions.
var rulesTools = []string{plugins.ToolRead, plugins.ToolWrite, plugins.ToolEdit}

// RulesInjector adds a subfolder's instructions to an agent's context:
// after a successful read, write or edit of a file, the instruction file of
// every folder from the file's up to (not including) the project root that
// has one (the first of the names found there) is added, each once per
// session. The project root's own file is not: the host puts it in every
// agent's system prompt from the first request.
type RulesInjector struct {
	project string
	names   []string
	mu      sync.Mutex
	sent    map[string]map[string]bool // session -> rules file -> injected
}

// NewRulesInjector returns the injector; project is used when an event has
// no cwd, names are the instruction file names (none given: AGENTS.md,
// then CLAUDE.md).
func NewRulesInjector(project string, names ...string) *RulesInjector {
	if names == nil {
		names = defaultRulesFiles
	}
	return &RulesInjector{project: project, names: names, sent: make(map[string]map[string]bool)}
}

func (h *RulesInjector) info() plugins.Info {
	info := builtinInfo(RulesInjectorID, PriorityContext, plugins.EventToolExecuteAfter, plugins.EventSessionEnd)
	info.Tools = map[string][]string{plugins.EventToolExecuteAfter: slices.Clone(rulesTools)}
	return info
}

func (h *RulesInjector) registered() Registered { return builtinRegistered(h, h.info(), FailDefault) }

// Info describes the hook.
func (h *RulesInjector) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// Handle injects a folder's instructions after a call touched a file in it.
func (h *RulesInjector) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Name == plugins.EventSessionEnd {
		h.mu.Lock()
		delete(h.sent, ev.SessionID)
		h.mu.Unlock()
		return allow, nil
	}
	if !slices.Contains(rulesTools, ev.Tool) || (ev.Result != nil && (ev.Result.IsError || ev.Result.Denied)) {
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
	files, err := h.folderRules(root, filepath.Dir(real))
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
		text, err := readCapped(root, f, maxRulesSize)
		if err != nil {
			continue // a file that leads out of the project, or is not a regular file, is not the project's
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

// folderRules returns the instruction files of the folders from dir up to
// root, root itself left out, outermost first: in each, the first of the
// names found.
func (h *RulesInjector) folderRules(root, dir string) ([]string, error) {
	var found []string
	for dir != root && realpath.Within(root, dir) {
		for _, n := range h.names {
			f := filepath.Join(dir, n)
			fi, err := os.Stat(f)
			if err == nil && fi.Mode().IsRegular() {
				found = append(found, f)
				break
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("look for rules: %w", err)
			}
		}
		dir = filepath.Dir(dir)
	}
	slices.Reverse(found)
	return found, nil
}

// readCapped reads a rules file whose real path is inside root, up to
// limit bytes, with a note when it was cut.
func readCapped(root, path string, limit int64) (string, error) {
	real, err := realpath.Resolve(root, path)
	if err != nil || !realpath.Within(root, real) {
		return "", fmt.Errorf("read rules %s: it leads outside the project", path)
	}
	// Opening never blocks on a named pipe, and only a regular file is read.
	f, err := safefile.Open(real)
	if err != nil {
		return "", fmt.Errorf("read rules: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", fmt.Errorf("read rules %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return string(b[:limit]) + fmt.Sprintf("\n[cut: %s is longer than %s; only its start is here]", filepath.Base(path), safefile.FormatSize(limit)), nil
	}
	return string(b), nil
}

var _ plugins.Hook = (*RulesInjector)(nil)
