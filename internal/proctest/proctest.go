// Package proctest helps tests watch the processes the code under test
// starts, through /proc (Linux).
package proctest

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Gone reports whether pid has exited (a zombie counts as gone).
func Gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	fields := strings.Fields(string(b[i+1:]))
	return len(fields) == 0 || fields[0] == "Z" || fields[0] == "X"
}

// WaitGone polls /proc until pid is gone, failing after a generous deadline.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !Gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Group lists the running members of process group pgid (zombies are
// left out).
func Group(pgid int) []int {
	des, _ := os.ReadDir("/proc")
	var out []int
	for _, de := range des {
		var pid int
		if _, err := fmt.Sscanf(de.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[0] != "X" && f[2] == fmt.Sprint(pgid) {
			out = append(out, pid)
		}
	}
	return out
}
