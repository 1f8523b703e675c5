//go:build !unix

package proc

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Off unix there are no process groups: only the direct child is started
// and killed.
func groupAttr() *syscall.SysProcAttr { return nil }

// groupAttrOn keeps the attributes a caller gave: there is no group to ask
// for here.
func groupAttrOn(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }

// ChildAttr has nothing to ask for here.
func ChildAttr() *syscall.SysProcAttr { return nil }

func termGroup(pid int) { killGroup(pid) }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// There is no job control to follow here.
func suspendGroup(int)  {}
func continueGroup(int) {}

func leaderExit(int) <-chan struct{} { return nil }

// BecomeSubreaper is Linux only.
func BecomeSubreaper() error { return errors.ErrUnsupported }

// KillChildren is Linux only.
func KillChildren(time.Duration) {}

func startTime(int) uint64 { return 0 }

func killLeftGroup(int, uint64) (int, error) { return 0, nil }

func alive(int, uint64) bool { return false }

// Undumpable is Linux only.
func Undumpable() error { return errors.ErrUnsupported }

func killMarked(string) map[int]int { return nil }
