package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Ledger records the process groups a host runs in files under one
// directory (.weave/run/), one file per group, removed when the group ends.
// A file left behind means its host died; Reap, run by the next start, kills
// what is left of those groups.
type Ledger struct {
	dir string
}

// NewLedger returns a ledger kept in dir, which is created on first use.
func NewLedger(dir string) *Ledger { return &Ledger{dir: dir} }

// entry is one recorded group.
type entry struct {
	PGID      int    `json:"pgid"`
	Start     uint64 `json:"start,omitempty"`
	HostPID   int    `json:"host_pid"`
	HostStart uint64 `json:"host_start,omitempty"`
	What      string `json:"what"`
}

// record writes the group's file and returns what removes it. A ledger that
// cannot be written does not stop the command; the group then relies on the
// parent-death signal alone.
func (l *Ledger) record(pgid int, what string) func() {
	self := os.Getpid()
	e := entry{PGID: pgid, Start: startTime(pgid), HostPID: self, HostStart: startTime(self), What: what}
	b, err := json.Marshal(e)
	if err != nil {
		return func() {}
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return func() {}
	}
	path := filepath.Join(l.dir, fmt.Sprintf("%d-%d.json", self, pgid))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return func() {}
	}
	return func() { _ = os.Remove(path) }
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
	des, err := os.ReadDir(l.dir)
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
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var e entry
		if json.Unmarshal(b, &e) != nil || e.PGID <= 1 {
			// Cut short by a crash while it was written.
			_ = os.Remove(path)
			continue
		}
		if e.HostPID == os.Getpid() || alive(e.HostPID, e.HostStart) {
			continue
		}
		n, err := killLeftGroup(e.PGID, e.Start)
		out = append(out, Reaped{PGID: e.PGID, What: e.What, Killed: n, Err: err})
		_ = os.Remove(path)
	}
	return out, nil
}
