//go:build unix

package plans

import (
	"errors"
	"os"
	"syscall"
)

// errLockBusy says that another descriptor holds the lock.
var errLockBusy = errors.New("lock is held")

// flockTry takes an exclusive flock on f without waiting. The lock belongs
// to f's open file description: closing f (or the process ending) frees it.
func flockTry(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLockBusy
		}
		return err
	}
}
