package proc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/weavehq/weave/internal/safefile"
)

// Ledger records the process groups a host runs in one file per host under
// one directory (.weave/run/<host pid>.json): a line naming the host, then
// a line for each group alive, rewritten in place as groups start and end. A line left behind means its
// host died; Reap, run by the next start, kills what is left of those
// groups.
//
// The file is opened once and rewritten without a rename or a sync: a
// command costs two small writes, not a file created and removed. A host
// that dies mid-write leaves at worst a cut line, which Reap skips, or the
// line of a group that had ended, whose recorded start time then no longer
// matches a live process and which Reap leaves alone.
type Ledger struct {
	dir string
	// inside opens the files: regular files inside the project only, so
	// a file linked to a device or out of the project is never read or
	// truncated.
	inside safefile.Inside

	mu     sync.Mutex
	f      *os.File
	failed bool // the file could not be opened: groups rely on the parent-death signal
	self   int
	start  uint64 // this host's start time, read once
	live   map[int]entry
	buf    bytes.Buffer
	// size is the file's length after the last write: a write that is not
	// shorter needs no truncate.
	size int
}

// maxLedgerFile bounds the read of one host's file: thousands of groups.
const maxLedgerFile = 1 << 20

// NewLedger returns a ledger kept in dir, inside the project root, which
// is created on first use.
func NewLedger(root, dir string) *Ledger {
	return &Ledger{dir: dir, inside: safefile.Inside{Root: root}}
}

// entry is one recorded group, or with PGID 0 the line naming the host.
type entry struct {
	PGID      int    `json:"pgid,omitempty"`
	Start     uint64 `json:"start,omitempty"`
	HostPID   int    `json:"host_pid"`
	HostStart uint64 `json:"host_start,omitempty"`
	What      string `json:"what,omitempty"`
}

// record adds the group to the host's file and returns what takes it out.
// A ledger that cannot be written does not stop the command; the group then
// relies on the parent-death signal alone.
func (l *Ledger) record(pgid int, what string) func() {
	start := startTime(pgid)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.openLocked() {
		return func() {}
	}
	l.live[pgid] = entry{PGID: pgid, Start: start, HostPID: l.self, HostStart: l.start, What: what}
	l.writeLocked()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.live, pgid)
		l.writeLocked()
	}
}

// markVar names the variable that marks every process a host's groups
// start, descendants included, with the host's identity.
const markVar = "WEAVE_PROCESS_HOST"

// mark returns env with the host's mark in place of any inherited one (a
// weave started by a block marks its own children). It opens the host's
// file, so that the host line is on disk before any marked process runs.
func (l *Ledger) mark(env []string) []string {
	l.mu.Lock()
	opened := l.openLocked()
	self, start := l.self, l.start
	l.mu.Unlock()
	if !opened {
		return env
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, markVar+"=") {
			out = append(out, kv)
		}
	}
	return append(out, markOf(self, start))
}

// markOf is the environment entry that marks a host's processes.
func markOf(hostPID int, hostStart uint64) string {
	return fmt.Sprintf("%s=%d.%d", markVar, hostPID, hostStart)
}

// openLocked opens the host's file on first use.
func (l *Ledger) openLocked() bool {
	if l.f != nil || l.failed {
		return l.f != nil
	}
	l.self = os.Getpid()
	l.start = startTime(l.self)
	l.live = make(map[int]entry)
	if err := l.inside.MkdirAll(l.dir, 0o755); err != nil {
		l.failed = true
		return false
	}
	f, err := l.inside.OpenFile(l.path(), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		l.failed = true
		return false
	}
	l.f = f
	l.writeLocked()
	return true
}

func (l *Ledger) path() string { return filepath.Join(l.dir, fmt.Sprintf("%d.json", l.self)) }

// writeLocked rewrites the file with the groups alive: the lines first,
// then the cut, so that the file never lacks a group that is alive.
func (l *Ledger) writeLocked() {
	l.buf.Reset()
	host, _ := json.Marshal(entry{HostPID: l.self, HostStart: l.start})
	l.buf.Write(host)
	l.buf.WriteByte('\n')
	pgids := make([]int, 0, len(l.live))
	for pgid := range l.live {
		pgids = append(pgids, pgid)
	}
	sort.Ints(pgids)
	for _, pgid := range pgids {
		b, err := json.Marshal(l.live[pgid])
		if err != nil {
			continue
		}
		l.buf.Write(b)
		l.buf.WriteByte('\n')
	}
	if _, err := l.f.WriteAt(l.buf.Bytes(), 0); err != nil {
		// Part of it may be there: the next write truncates.
		l.size = math.MaxInt
		return
	}
	if l.buf.Len() < l.size {
		if err := l.f.Truncate(int64(l.buf.Len())); err != nil {
			return
		}
	}
	l.size = l.buf.Len()
}

// Close removes the host's file: every group it recorded has ended by
// then (Set.Close waits for them).
func (l *Ledger) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	if len(l.live) == 0 {
		if rerr := l.inside.Remove(l.path()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	l.f = nil
	l.failed = true // nothing is recorded after Close
	return err
}

// Reaped is a group Reap found left behind by a host that is gone.
type Reaped struct {
	PGID int
	What string
	// Killed is how many of its processes were still running.
	Killed int
	// Err says why the group was left alone, if it was.
	Err error
}

// Reap kills the recorded groups whose host is no longer running and
// removes their records; groups of a running host (this one, or another
// weave working in the same project) are left alone. Call it before running
// anything a dead host may have left running, such as the task it was
// running.
func (l *Ledger) Reap() ([]Reaped, error) {
	des, err := l.inside.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.dir, err)
	}
	var out []Reaped
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		path := filepath.Join(l.dir, de.Name())
		b, err := l.inside.ReadFile(path, maxLedgerFile)
		if err != nil {
			continue // a named pipe, a device, a link: not a host's file
		}
		host, entries, hostAlive := ledgerEntries(b)
		if hostAlive {
			continue
		}
		for _, e := range entries {
			n, err := killLeftGroup(e.PGID, e.Start)
			out = append(out, Reaped{PGID: e.PGID, What: e.What, Killed: n, Err: err})
		}
		// A group started as the host died was never recorded: its
		// processes carry the host's mark.
		if host.HostPID > 0 {
			marked := killMarked(markOf(host.HostPID, host.HostStart))
			pgids := make([]int, 0, len(marked))
			for pgid := range marked {
				pgids = append(pgids, pgid)
			}
			sort.Ints(pgids)
			for _, pgid := range pgids {
				out = append(out, Reaped{PGID: pgid, What: "started as the last run was killed", Killed: marked[pgid]})
			}
		}
		_ = l.inside.Remove(path)
	}
	return out, nil
}

// ledgerEntries reads a host's file: the line naming the host, its groups,
// and whether its host is still running (this one, or another weave in the
// same project), when the file is to be left alone. A cut or unreadable
// line is skipped.
func ledgerEntries(b []byte) (entry, []entry, bool) {
	var host entry
	var out []entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		var e entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.HostPID <= 0 {
			continue
		}
		if e.HostPID == os.Getpid() || alive(e.HostPID, e.HostStart) {
			return entry{}, nil, true
		}
		if e.PGID > 1 {
			out = append(out, e)
		} else if host.HostPID == 0 {
			host = e
		}
	}
	return host, out, false
}
