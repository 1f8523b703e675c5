package tools

import "errors"

// errChanged says that the path changed between its check and its use.
var errChanged = errors.New("a directory on the way changed into a link (or a file) while the call was checked; try again")
