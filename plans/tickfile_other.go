//go:build !unix

package plans

import "os"

// openForPatch: off unix a file cannot be opened without following a link,
// so the plan is written as a new file instead (see SetDoneIn).
func openForPatch(string) (*os.File, error) { return nil, errNoPatch }
