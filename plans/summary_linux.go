//go:build linux

package plans

import (
	"io/fs"
	"syscall"
)

// changeTime returns the file's status change time and inode, which no
// tool can set back, unlike the modification time.
func changeTime(fi fs.FileInfo) (int64, uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ctim.Nano(), st.Ino
}
