//go:build windows

package plans

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// errLockBusy says that another handle holds the lock.
var errLockBusy = errors.New("lock is held")

// flockTry takes an exclusive lock on f without waiting. The lock belongs to
// f's handle: closing f (or the process ending) frees it.
func flockTry(f *os.File) error {
	ol := new(windows.Overlapped)
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errLockBusy
	}
	return err
}
