//go:build unix

package logfile

import (
	"io/fs"
	"syscall"
)

// linkedElsewhere says the file has another name than the log's: a hard
// link a block planted where a log goes, which may be a file outside the
// project that the log would be written into.
func linkedElsewhere(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}
