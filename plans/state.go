package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weavehq/weave/internal/atomicfile"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/safefile"
	"github.com/weavehq/weave/internal/textcap"
)

// SchemaVersion is the version of state.json this package writes.
const SchemaVersion = 1

// State is the work state of a project, kept in .weave/state.json.
type State struct {
	SchemaVersion int                    `json:"schema_version"`
	ActivePlan    string                 `json:"active_plan"` // absolute path to the plan file
	StartedAt     time.Time              `json:"started_at"`
	SessionIDs    []string               `json:"session_ids"`
	PlanName      string                 `json:"plan_name"`
	Agent         string                 `json:"agent"`
	StartSHA      string                 `json:"start_sha,omitempty"` // git HEAD when the plan started
	Paused        bool                   `json:"paused"`
	PausedReason  string                 `json:"paused_reason,omitempty"`
	InFlight      *InFlight              `json:"in_flight,omitempty"` // the task being worked on
	Tasks         map[string]*TaskRecord `json:"tasks,omitempty"`     // unfinished tasks attempted, by Task.Key()
	LastError     string                 `json:"last_error,omitempty"`
	// Warned names the plan's template warnings the last run showed, so
	// that they show again only when they change.
	Warned string `json:"warned,omitempty"`
	// Continuation is the work-continuation bookkeeping: the nudges sent
	// without progress, and whether a person stopped them.
	Continuation *Continuation `json:"continuation,omitempty"`
	// Integration is the branch a run with workers lands its tasks on;
	// nil for a run of one task at a time.
	Integration *Integration `json:"integration,omitempty"`
	// Running are the tasks the workers of a run are on, by Task.Key(); a
	// run of one task at a time keeps InFlight instead.
	Running   map[string]*Running `json:"running,omitempty"`
	UpdatedAt time.Time           `json:"updated_at"`
	// Spending is what the plan's runs spent on models, and the budgets
	// raised for it (spending.go).
	Spending *Spending `json:"spending,omitempty"`
}

// Integration is a run's integration branch: where its tasks land.
type Integration struct {
	// Branch is the branch's name (weave/<plan>).
	Branch string `json:"branch"`
	// Base is the commit the branch started from (the person's HEAD).
	Base string `json:"base"`
	// From is the branch the person was on when the run started, which
	// run.finish: ff fast-forwards.
	From string `json:"from,omitempty"`
}

// Running is a task a worker is on.
type Running struct {
	Number int    `json:"number,omitempty"`
	Title  string `json:"title"`
	// Worker names the worker (1-based for a local one; a remote worker's
	// name otherwise).
	Worker   string `json:"worker"`
	Worktree string `json:"worktree,omitempty"` // relative to the project
	Branch   string `json:"branch"`
	// Base is the integration commit the task started from.
	Base string `json:"base"`
	// AttemptID names this attempt in its commit's trailer, so that a
	// commit is landed at most once however often the task ran.
	AttemptID string    `json:"attempt_id"`
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"started_at"`
	// Commit is the task's commit on its branch once the worker finished;
	// Landing is set while it lands.
	Commit  string `json:"commit,omitempty"`
	Landing bool   `json:"landing,omitempty"`
	// Labels are what a worker joined over the bus offers; Heartbeat is
	// when the run last heard from it (its award, then each lease
	// renewal). Both are empty for a local worker.
	Labels    []string  `json:"labels,omitempty"`
	Heartbeat time.Time `json:"heartbeat,omitzero"`
}

// Continuation is what the work-continuation hook counts for the active
// plan, kept in state.json so that it survives a restart.
type Continuation struct {
	// Nudges counts the continuation prompts sent since the plan last
	// made progress.
	Nudges int `json:"nudges"`
	// Completed is the plan's count of done tasks at the last nudge.
	Completed int `json:"completed"`
	// Stopped, when set, says why continuation is off for the plan: a
	// person's message in the session ("the person sent a message"), or
	// the nudges ran out and the plan paused. No nudge is sent while it is
	// set; the next `weave start-work` clears it.
	Stopped string `json:"stopped,omitempty"`
}

// Stale is how many nudges were sent without progress, the plan now
// having completed tasks done.
func (c *Continuation) Stale(completed int) int {
	if c == nil || completed > c.Completed {
		return 0
	}
	return c.Nudges
}

// Nudge records a continuation prompt sent with completed tasks done.
func (c *Continuation) Nudge(completed int) {
	c.Nudges = c.Stale(completed) + 1
	c.Completed = completed
}

// InFlight is the task a run was working on. After a crash it is retried.
type InFlight struct {
	Key       string    `json:"key"`
	Number    int       `json:"number,omitempty"`
	Title     string    `json:"title"`
	StartedAt time.Time `json:"started_at"`
}

// TaskRecord is how one task went so far.
type TaskRecord struct {
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	// Done is set on a task a person ticked (By) and, in files of older
	// versions, on every finished task.
	Done bool `json:"done,omitempty"`
	// By is who ticked the task when it was not the run: ByPerson for
	// `weave task done`.
	By string `json:"by,omitempty"`
	// Skipped marks a task the run left for a person (start-work --skip).
	Skipped bool `json:"skipped,omitempty"`
	// Forced marks a task a person ticked with `weave task done --force`,
	// past its failing (or unrun) verify blocks.
	Forced bool `json:"forced,omitempty"`
}

// ByPerson is TaskRecord.By for a task a person ticked.
const ByPerson = "person"

// Record returns the record for key, creating it when missing.
func (s *State) Record(key string) *TaskRecord {
	if s.Tasks == nil {
		s.Tasks = map[string]*TaskRecord{}
	}
	r := s.Tasks[key]
	if r == nil {
		r = &TaskRecord{}
		s.Tasks[key] = r
	}
	return r
}

// Store reads and writes a project's state.json and holds its lock.
type Store struct {
	dir string
	now func() time.Time
	// w writes state.json with its next file made ahead (WriteAhead);
	// nil writes each save as atomicfile.WriteFile does. Saves may come
	// from a model call's goroutine (a charge written down).
	w atomic.Pointer[atomicfile.Writer]
}

// NewStore returns the store of the project whose .weave directory is
// weaveDir.
func NewStore(weaveDir string) *Store {
	return &Store{dir: weaveDir, now: time.Now}
}

// ProjectStore returns the store of the project at root.
func ProjectStore(root string) *Store { return NewStore(layout.NewProject(root).Dir()) }

func (s *Store) layout() layout.Project { return layout.NewProject(filepath.Dir(s.dir)) }

// Path is the path of state.json.
func (s *Store) Path() string { return filepath.Join(s.dir, layout.StateFile) }

func (s *Store) lockPath() string { return filepath.Join(s.dir, layout.LockFile) }

// MaxStateSize bounds what Load reads of state.json. The state a run writes
// stays far below it: the texts it stores are capped (see MaxStoredText).
const MaxStateSize = 16 << 20

// Load reads state.json. A missing file gives (nil, "", nil). A symbolic
// link, a named pipe or anything else that is not a regular file is refused
// with an error and left alone. A file that is not valid state (bad JSON, no
// active_plan, unreadable, larger than MaxStateSize) is moved aside to
// state.json.corrupt-<UTC time> and Load returns (nil, warning, nil): the
// plan's checkboxes stay the truth for progress. A state written by a newer
// weave (schema_version above SchemaVersion) is left alone and is an error.
// An error is returned only when the file can be neither read nor moved.
func (s *Store) Load() (st *State, warning string, err error) {
	st, why, err := s.read()
	if st != nil || why == "" || err != nil {
		return st, "", err
	}
	path := s.Path()
	aside, err := s.moveAside()
	if err != nil {
		return nil, "", fmt.Errorf("state %s is %s and could not be moved aside: %w; remove it by hand", path, why, err)
	}
	return nil, fmt.Sprintf("state %s was %s; moved it to %s and starting from the plan's checkboxes", path, why, aside), nil
}

// Read reads state.json as Load does but changes nothing, for readers
// such as `weave status`: a file that is not valid state gives (nil,
// warning, nil), and the next run moves it aside.
func (s *Store) Read() (*State, string, error) {
	st, why, err := s.read()
	if why != "" {
		return nil, fmt.Sprintf("state %s is %s; the next `weave start-work` moves it aside and starts from the plan's checkboxes", s.Path(), why), nil
	}
	return st, "", err
}

// read returns the state, or why the file is not valid state; a missing
// file is neither, and a file that is not ours (a link, a pipe) is an error.
func (s *Store) read() (st *State, why string, err error) {
	path := s.Path()
	data, err := safefile.ReadFileNoFollow(path, MaxStateSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if errors.Is(err, safefile.ErrSymlink) || errors.Is(err, safefile.ErrNotRegular) {
		// Never read through it, never move it: it is not ours.
		return nil, "", fmt.Errorf("state %w; weave keeps its state in a regular file: remove it and run again", err)
	}
	var tl *safefile.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, fmt.Sprintf("larger than %s", safefile.FormatSize(MaxStateSize)), nil
	case err != nil:
		return nil, fmt.Sprintf("unreadable (%v)", err), nil
	}
	st, why, v := decodeState(data)
	if st == nil && v > SchemaVersion {
		return nil, "", fmt.Errorf("state %s has schema_version %d, newer than this weave reads (%d); upgrade weave or remove the file", path, v, SchemaVersion)
	}
	return st, why, nil
}

// decodeState returns the state in data, or nil, why it is not valid and
// the schema version it claims.
func decodeState(data []byte) (*State, string, int) {
	var st *State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Sprintf("not valid JSON (%v)", err), 0
	}
	switch {
	case st == nil:
		return nil, "empty (null)", 0
	case st.SchemaVersion > SchemaVersion:
		return nil, "newer", st.SchemaVersion
	case st.SchemaVersion < 0:
		return nil, fmt.Sprintf("invalid (schema_version %d)", st.SchemaVersion), st.SchemaVersion
	case st.ActivePlan == "":
		return nil, "invalid (no active_plan)", st.SchemaVersion
	}
	// Files written before schema_version existed are version 1.
	st.SchemaVersion = SchemaVersion
	for k, r := range st.Tasks {
		// Older versions kept done tasks' records; their checkboxes say it.
		// A task a person ticked keeps its record: it says who.
		if r == nil || r.Done && r.By == "" {
			delete(st.Tasks, k)
		}
	}
	return st, "", SchemaVersion
}

func (s *Store) moveAside() (string, error) {
	base := s.Path() + ".corrupt-" + s.now().UTC().Format("20060102T150405Z")
	aside := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = base + "-" + strconv.Itoa(i)
	}
	return aside, os.Rename(s.Path(), aside)
}

// Save writes st atomically (temp file, fsync, rename, fsync the directory),
// after setting st.UpdatedAt and, when unset, st.SchemaVersion, and capping
// its texts at MaxStoredText bytes each.
func (s *Store) Save(st *State) error {
	if st == nil {
		return errors.New("save state: nil state")
	}
	if st.SchemaVersion == 0 {
		st.SchemaVersion = SchemaVersion
	}
	if st.SessionIDs == nil {
		st.SessionIDs = []string{} // an array in the file, never null
	}
	st.UpdatedAt = s.now().UTC()
	capTexts(st)
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	data = append(data, '\n')
	write := atomicfile.WriteFile
	if w := s.w.Load(); w != nil {
		write = func(_ string, data []byte, perm os.FileMode) error { return w.WriteFile(data, perm) }
	}
	if err := write(s.Path(), data, 0o644); err != nil {
		// The directory is looked at only when the write failed: a save
		// per task need not stat it first.
		if derr := s.checkDir(); derr != nil {
			err = derr
		}
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// MaxStoredText bounds each text Save stores (errors, reasons): they come
// from commands and plugins, and one runaway error must not grow state.json
// without limit. The full text goes to the run's logs.
const MaxStoredText = 4 << 10

func capTexts(st *State) {
	st.LastError = textcap.Cap(st.LastError, MaxStoredText)
	st.PausedReason = textcap.Cap(st.PausedReason, MaxStoredText)
	if st.Continuation != nil {
		st.Continuation.Stopped = textcap.Cap(st.Continuation.Stopped, MaxStoredText)
	}
	if st.InFlight != nil {
		st.InFlight.Title = textcap.Cap(st.InFlight.Title, MaxStoredText)
	}
	for _, r := range st.Tasks {
		if r != nil {
			r.LastError = textcap.Cap(r.LastError, MaxStoredText)
		}
	}
}

// Clear removes state.json; a missing file is not an error.
func (s *Store) Clear() error {
	if err := os.Remove(s.Path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear state: %w", err)
	}
	return nil
}

// WriteAhead makes each save's file ahead of it, while the caller goes on
// (atomicfile.Writer), for a run that saves once per task; the saves keep
// every guarantee of Save. stop lets the file made ahead go.
func (s *Store) WriteAhead() (stop func()) {
	w := atomicfile.NewWriter(s.Path())
	s.w.Store(w)
	return func() {
		s.w.CompareAndSwap(w, nil)
		_ = w.Close()
	}
}

func (s *Store) checkDir() error {
	fi, err := os.Stat(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no %s directory: run `weave init` in the project first", s.dir)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; move it away and run `weave init`", s.dir)
	}
	return nil
}

// LockedError says that another process holds the project's lock.
type LockedError struct {
	PID  int // 0 when the holder's PID could not be read
	Path string
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("another weave drives this project (lock %s is held); wait for it to finish or stop it", e.Path)
	}
	return fmt.Sprintf("another weave (pid %d) drives this project (lock %s); wait for it to finish or stop it", e.PID, e.Path)
}

// Lock takes the project's lock (.weave/weave.lock, an flock) without
// waiting, and writes this process's PID into the file. A busy lock gives a
// *LockedError naming the holder. The lock is released by calling release or
// when the process exits, even by a crash, so it is never stale. Taking the
// lock removes the temporary files that a writer killed in the middle of an
// atomic write left beside state.json and the plans.
//
// The lock file is opened without following a symbolic link and must be a
// regular file: a link planted there is refused, never truncated through.
func (s *Store) Lock() (release func() error, err error) {
	if err := s.checkDir(); err != nil {
		return nil, fmt.Errorf("lock project: %w", err)
	}
	path := s.lockPath()
	f, err := safefile.OpenNoFollow(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if errors.Is(err, safefile.ErrSymlink) || errors.Is(err, safefile.ErrNotRegular) {
			return nil, fmt.Errorf("lock project: %w; remove it and run again (weave creates it)", err)
		}
		return nil, fmt.Errorf("lock project %s: %w", path, err)
	}
	if err := flockTry(f); err != nil {
		_ = f.Close()
		if errors.Is(err, errLockBusy) {
			return nil, &LockedError{PID: readPID(path), Path: path}
		}
		return nil, fmt.Errorf("lock project %s: %w", path, err)
	}
	// The PID is written through the locked descriptor itself, so what is
	// written is the file that was checked and locked.
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(pid, 0)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock project %s: write pid: %w", path, err)
	}
	// A writer killed in the middle of an atomic write left its temporary
	// file beside the state or a plan; the lock holder clears them.
	for _, dir := range []string{s.dir, s.layout().Plans()} {
		_, _ = atomicfile.RemoveTemps(dir)
	}
	return func() error {
		// Empty the file while still holding the lock, so that no later
		// holder's PID is wiped. Closing the descriptor releases the lock.
		terr := f.Truncate(0)
		if err := f.Close(); err != nil {
			return fmt.Errorf("unlock project %s: %w", path, err)
		}
		if terr != nil {
			return fmt.Errorf("unlock project %s: %w", path, terr)
		}
		return nil
	}, nil
}

// maxPIDFile bounds what readPID reads of the lock file.
const maxPIDFile = 64

func readPID(path string) int {
	data, err := safefile.ReadFileNoFollow(path, maxPIDFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid < 0 {
		return 0
	}
	return pid
}

// gitTimeout bounds the git call of GitHead.
const gitTimeout = 10 * time.Second

// GitHead returns the commit SHA of HEAD in the repository holding dir, or
// "" when dir is not in a repository, the repository has no commit yet, or
// git is not installed.
func GitHead(dir string) string {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	out, err := proc.GitOutput(ctx, dir, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return ""
	}
	sha := strings.TrimSpace(string(out))
	if len(sha) != 40 && len(sha) != 64 {
		return ""
	}
	for _, c := range sha {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return sha
}
