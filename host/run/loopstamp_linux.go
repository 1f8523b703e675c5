//go:build linux

package run

import (
	"io/fs"
	"syscall"
)

// stampOf is what identifies a file's version beyond its size and mtime:
// its inode and change time.
func stampOf(fi fs.FileInfo) any {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return [2]int64{int64(st.Ino), st.Ctim.Nano()}
	}
	return nil
}
