//go:build unix

package plans

import (
	"os"
	"syscall"
)

// openForPatch opens the plan file for a patch in place; a symbolic link
// is refused by the kernel (plans are regular files, see readPlanFile).
func openForPatch(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
}
