//go:build linux

package proc

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// waitState polls until every live member of pgid has a state for which
// want holds, failing after a generous deadline.
func waitState(t *testing.T, pgid int, what string, want func(byte) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a failure guard only
	for {
		members := groupMembers(pgid)
		ok := len(members) > 0
		for _, pid := range members {
			if st, found := readStat(pid); !found || !want(st.state) {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var states []string
			for _, pid := range members {
				st, _ := readStat(pid)
				states = append(states, fmt.Sprintf("%d:%c", pid, st.state))
			}
			t.Fatalf("process group %d: members %v never all %s", pgid, states, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopped holds for a process that cannot run: stopped (T), a zombie (Z)
// whose stopped parent cannot reap it yet, or in the kernel (D), as a shell
// that vforked waits there for its child, stopped before it could exec; it
// runs again only with SIGCONT, as its child does.
func stopped(s byte) bool { return s == 'T' || s == 'Z' || s == 'D' }
func running(s byte) bool { return s != 'T' }

func TestSuspendStopsEveryGroupAndThoseStartedMeanwhile(t *testing.T) {
	set := NewSet(0, nil)
	defer set.Close(context.Background())
	start := func() *Group {
		// A child that catches SIGTSTP and SIGTERM: SIGSTOP stops it all
		// the same.
		cmd := exec.Command("sh", "-c", "trap '' TSTP TERM; while :; do sleep 0.05; done")
		g, err := set.Start(cmd, "loop")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = g.Wait(context.Background()) }()
		return g
	}
	first := start()
	waitState(t, first.PID(), "running", running)
	if n := set.Suspend(); n != 1 {
		t.Errorf("Suspend stopped %d groups, want 1", n)
	}
	waitState(t, first.PID(), "stopped", stopped)
	second := start()
	waitState(t, second.PID(), "stopped", stopped)
	set.Continue()
	waitState(t, first.PID(), "running", running)
	waitState(t, second.PID(), "running", running)

	// A group stopped with weave still ends with the kill sequence: its
	// SIGTERM is followed by SIGCONT.
	set.Suspend()
	waitState(t, first.PID(), "stopped", stopped)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := set.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first.PID())
	waitGone(t, second.PID())
}
