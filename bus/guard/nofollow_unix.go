//go:build unix

package guard

import "syscall"

// noFollow keeps a token file that was swapped for a symlink from being
// read or written through it.
const noFollow = syscall.O_NOFOLLOW
