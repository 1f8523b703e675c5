package hooks

import (
	"github.com/weavehq/weave/internal/realpath"

	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/weavehq/weave/plugins"
)

// WriteGuardID names the write-existing-file guard.
const WriteGuardID = "weave.write-existing-file-guard"

// WriteGuard stops a session from overwriting a file it has not read: a
// write to an existing file is blocked unless the session read it (or wrote
// or edited it) before, and the file has not changed on disk since. Reads are
// learnt from successful read calls on tool.execute.after.
type WriteGuard struct {
	project string
	mu      sync.Mutex
	// seen maps session -> real path -> modification time when last seen.
	seen map[string]map[string]time.Time
}

// NewWriteGuard returns the guard; project is used when an event has no cwd.
func NewWriteGuard(project string) *WriteGuard {
	return &WriteGuard{project: project, seen: make(map[string]map[string]time.Time)}
}

func (h *WriteGuard) info() plugins.Info {
	info := builtinInfo(WriteGuardID, PriorityGuard, plugins.EventToolExecuteBefore, plugins.EventToolExecuteAfter, plugins.EventSessionEnd)
	info.Tools = map[string][]string{
		plugins.EventToolExecuteBefore: {plugins.ToolWrite},
		plugins.EventToolExecuteAfter:  knownTools,
	}
	return info
}

func (h *WriteGuard) registered() Registered { return builtinRegistered(h, h.info(), FailClosed) }

// Info describes the hook.
func (h *WriteGuard) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// Handle checks writes and records reads.
func (h *WriteGuard) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	switch ev.Name {
	case plugins.EventSessionEnd:
		h.mu.Lock()
		delete(h.seen, ev.SessionID)
		h.mu.Unlock()
		return allow, nil
	case plugins.EventToolExecuteAfter:
		h.record(ev)
		return allow, nil
	}
	if ev.Tool != plugins.ToolWrite {
		return allow, nil
	}
	p, ok := plugins.ToolPath(ev.Args)
	if !ok {
		return allow, nil // nothing to overwrite; the tool rejects the call
	}
	project, err := projectDir(ev, h.project)
	if err != nil {
		return plugins.Decision{}, err
	}
	real, err := realpath.Resolve(project, p)
	if err != nil {
		return block(fmt.Sprintf("cannot resolve %s: %v", p, err)), nil
	}
	fi, err := os.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return allow, nil
	}
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("stat %s: %w", real, err)
	}
	if fi.IsDir() {
		return allow, nil // the write tool reports that itself
	}
	h.mu.Lock()
	mt, read := h.seen[ev.SessionID][real]
	h.mu.Unlock()
	switch {
	case !read:
		return block(fmt.Sprintf("%s already exists and this session has not read it; read it first, then write", p)), nil
	case !mt.Equal(fi.ModTime()):
		return block(fmt.Sprintf("%s changed on disk since this session read it; read it again, then write", p)), nil
	}
	return allow, nil
}

// knownTools are the tools after which a session knows a file's contents.
var knownTools = []string{plugins.ToolRead, plugins.ToolWrite, plugins.ToolEdit}

// record notes a file the session now knows: read, written or edited with
// success.
func (h *WriteGuard) record(ev plugins.Event) {
	if !slices.Contains(knownTools, ev.Tool) {
		return
	}
	if ev.Result != nil && (ev.Result.IsError || ev.Result.Denied) {
		return
	}
	p, ok := plugins.ToolPath(ev.Args)
	if !ok {
		return
	}
	project, err := projectDir(ev, h.project)
	if err != nil {
		return
	}
	real, err := realpath.Resolve(project, p)
	if err != nil {
		return
	}
	fi, err := os.Stat(real)
	if err != nil || fi.IsDir() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen[ev.SessionID] == nil {
		h.seen[ev.SessionID] = make(map[string]time.Time)
	}
	h.seen[ev.SessionID][real] = fi.ModTime()
}

var _ plugins.Hook = (*WriteGuard)(nil)
