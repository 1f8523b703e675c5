package proc

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"
)

// DefaultGrace is the time a group has between SIGTERM and SIGKILL when a
// Set is given none.
const DefaultGrace = time.Second

// ErrClosed is returned by Start once the Set is closed.
var ErrClosed = errors.New("weave is shutting down; no new process is started")

// Set is the process groups a run started. Close stops every one of them and
// returns when they are gone. The zero Set and a nil *Set are usable: they
// start groups with DefaultGrace and record nothing. A Set is safe for
// concurrent use.
type Set struct {
	grace  time.Duration
	ledger *Ledger

	mu     sync.Mutex
	live   map[*Group]struct{}
	closed bool
	// suspended is set between Suspend and Continue: a group that starts
	// meanwhile is stopped at once (jobcontrol.go).
	suspended bool
	// starting counts the Starts under way, which Close waits for: a
	// group whose command has started but that is not yet in live would
	// otherwise outlive Close.
	starting sync.WaitGroup
}

// NewSet returns a Set whose groups get grace between SIGTERM and SIGKILL
// (zero means DefaultGrace) and, when ledger is not nil, are recorded in it
// while they run.
func NewSet(grace time.Duration, ledger *Ledger) *Set {
	return &Set{grace: grace, ledger: ledger}
}

func (s *Set) graceOf() time.Duration {
	if s == nil || s.grace <= 0 {
		return DefaultGrace
	}
	return s.grace
}

// Group is one started command and the process group it leads.
type Group struct {
	set   *Set
	cmd   *exec.Cmd
	pid   int
	what  string
	grace time.Duration

	stopOnce sync.Once
	stopCh   chan struct{}
	exited   chan struct{} // closed when the leader has exited
	done     chan struct{} // closed when Wait has returned
	unrecord func()
}

// Start starts cmd as the leader of a new process group (on unix), tied to
// weave's life (Linux: parent-death signal), and tracked by s until Wait
// returns. what describes the command in the ledger and in errors. The
// caller must call Wait.
func (s *Set) Start(cmd *exec.Cmd, what string) (*Group, error) {
	if s != nil {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		s.starting.Add(1)
		s.mu.Unlock()
		defer s.starting.Done()
	}
	cmd.SysProcAttr = groupAttrOn(cmd.SysProcAttr)
	if s != nil && s.ledger != nil {
		// The group is recorded only once it has started; a host killed in
		// between would leave it unrecorded. The mark in its environment,
		// which every descendant inherits, lets Reap find it all the same.
		cmd.Env = s.ledger.mark(cmd.Environ())
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &Group{
		set: s, cmd: cmd, pid: cmd.Process.Pid, what: what, grace: s.graceOf(),
		stopCh: make(chan struct{}), exited: make(chan struct{}), done: make(chan struct{}),
		unrecord: func() {},
	}
	if s == nil {
		return g, nil
	}
	if s.ledger != nil {
		g.unrecord = s.ledger.record(g.pid, what)
	}
	s.mu.Lock()
	if s.live == nil {
		s.live = make(map[*Group]struct{})
	}
	s.live[g] = struct{}{}
	if s.suspended {
		suspendGroup(g.pid)
		go s.stopAgain(g.pid)
	}
	s.mu.Unlock()
	return g, nil
}

// stopAgain stops a group that started while the set was suspended once
// more, a moment later: its leader may have been forking when the first
// stop came, and a child the kernel had not yet put in the group missed it.
func (s *Set) stopAgain(pgid int) {
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.suspended {
		suspendGroup(pgid)
	}
}

// PID is the leader's process ID, which is also the group's ID on unix.
func (g *Group) PID() int { return g.pid }

// Stop asks the group to stop: SIGTERM to the group, then SIGKILL after the
// grace period unless the leader has exited. It returns at once; Wait
// returns when the leader is gone.
func (g *Group) Stop() {
	g.stopOnce.Do(func() { close(g.stopCh) })
}

// Wait waits for the command to exit, running the kill sequence when ctx
// ends or Stop is called. When the leader exits, anything it left running
// in its group is killed. Wait returns cmd.Wait's error.
func (g *Group) Wait(ctx context.Context) error {
	waitErr := make(chan error, 1)
	go func() { waitErr <- g.cmd.Wait() }()
	leaderGone := leaderExit(g.pid)
	stopping, stopCh, ctxDone := false, g.stopCh, ctx.Done()
	var err error
loop:
	for {
		select {
		case err = <-waitErr:
			break loop
		case <-leaderGone:
			// The leader is gone: what it left behind goes too, which also
			// closes the pipes a background child held open.
			leaderGone = nil
			closeOnce(g.exited)
			killGroup(g.pid)
		case <-stopCh:
			stopCh = nil
		case <-ctxDone:
			ctxDone = nil
		}
		if !stopping && (stopCh == nil || ctxDone == nil) {
			stopping = true
			go g.killSequence()
		}
	}
	closeOnce(g.exited)
	killGroup(g.pid)
	g.unrecord()
	if s := g.set; s != nil {
		s.mu.Lock()
		delete(s.live, g)
		s.mu.Unlock()
	}
	close(g.done)
	return err
}

// killSequence is TERM the group, wait for the leader up to the grace
// period, KILL the group.
func (g *Group) killSequence() {
	termGroup(g.pid)
	t := time.NewTimer(g.grace)
	defer t.Stop()
	select {
	case <-g.exited:
	case <-t.C:
	}
	killGroup(g.pid)
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// Close stops every group of the set with the kill sequence and waits until
// each one's Wait has returned, or until ctx ends, when the groups left are
// killed outright. No group starts after Close. Close may be called more
// than once.
func (s *Set) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	// No Start begins now; those under way add their group to live first.
	s.starting.Wait()
	s.mu.Lock()
	groups := make([]*Group, 0, len(s.live))
	for g := range s.live {
		groups = append(groups, g)
	}
	s.mu.Unlock()
	for _, g := range groups {
		g.Stop()
	}
	for _, g := range groups {
		select {
		case <-g.done:
		case <-ctx.Done():
			for _, g := range groups {
				killGroup(g.pid)
			}
			return fmt.Errorf("stop %s (pid %d): %w", g.what, g.pid, ctx.Err())
		}
	}
	return s.ledger.Close()
}
