//go:build !unix

package jwz

import (
	"errors"
	"fmt"
)

// lock refuses: jwz locks its store with flock(2), which this platform
// lacks, and appending without its lock could tear jwz's own writes.
func lock(dir string) (func(), error) {
	return nil, fmt.Errorf("lock jwz store %s: %w", dir, errors.ErrUnsupported)
}
