//go:build !unix

package logfile

import "io/fs"

// linkedElsewhere: hard links are not looked for off Unix.
func linkedElsewhere(fs.FileInfo) bool { return false }
