//go:build unix && !linux

package proc

import (
	"errors"
	"syscall"
	"time"
)

// groupAttr puts a child in its own process group. There is no parent-death
// signal to ask for off Linux; Set.Close and the ledger end the groups.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// groupAttrOn adds groupAttr's settings to the attributes a caller gave,
// or returns groupAttr's when it gave none.
func groupAttrOn(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	if a == nil {
		return groupAttr()
	}
	a.Setpgid, a.Pgid = true, 0
	return a
}

// ChildAttr is for a child that stays in weave's process group.
func ChildAttr() *syscall.SysProcAttr { return nil }

// termGroup sends SIGTERM, then SIGCONT: a group stopped with weave
// (Ctrl-Z) acts on the SIGTERM only once continued.
func termGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
}
func killGroup(pgid int)     { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
func suspendGroup(pgid int)  { _ = syscall.Kill(-pgid, syscall.SIGSTOP) }
func continueGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGCONT) }

// leaderExit cannot watch a process without reaping it here: the group's
// leftovers are killed once cmd.Wait returns (after its WaitDelay).
func leaderExit(int) <-chan struct{} { return nil }

// BecomeSubreaper is Linux only.
func BecomeSubreaper() error { return errors.ErrUnsupported }

// KillChildren needs /proc; off Linux the groups are all weave can end.
func KillChildren(time.Duration) {}

func startTime(pid int) uint64 {
	if syscall.Kill(pid, 0) != nil {
		return 0
	}
	return 1
}

// killLeftGroup cannot check process identities here; a group is killed
// when it still has members (the kernel keeps a live group's number from
// new processes).
func killLeftGroup(pgid int, _ uint64) (int, error) {
	if syscall.Kill(-pgid, 0) != nil {
		return 0, nil
	}
	killGroup(pgid)
	return 1, nil
}

func alive(pid int, _ uint64) bool { return startTime(pid) != 0 }

// Undumpable is Linux only (see the package doc for what that leaves
// open elsewhere).
func Undumpable() error { return errors.ErrUnsupported }

// killMarked needs /proc to read environments; off Linux the recorded
// groups are all the next start can end.
func killMarked(string) map[int]int { return nil }
