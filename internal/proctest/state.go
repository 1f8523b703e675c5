package proctest

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// State is pid's state letter from /proc/<pid>/stat ('R', 'S', 'T' for
// stopped...), or 0 when pid is not there.
func State(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) == 0 || f[0] == "" {
		return 0
	}
	return f[0][0]
}
