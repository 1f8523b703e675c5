//go:build linux

package plans

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHelperLockNoRoom is run as a subprocess by TestLockReportsFailedPIDWrite:
// with a file size limit of zero bytes, no write can grow the lock file, so
// writing the PID fails (EFBIG) while opening, locking and truncating the
// file succeed.
func TestHelperLockNoRoom(t *testing.T) {
	dir := os.Getenv("WEAVE_TEST_LOCK_NO_ROOM")
	if dir == "" {
		t.Skip("helper process only")
	}
	// Past the limit the kernel also sends SIGXFSZ; the write's error is
	// what Lock must report.
	signal.Ignore(syscall.SIGXFSZ)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setup:", err)
		os.Exit(2)
	}
	lim.Cur = 0
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setup:", err)
		os.Exit(2)
	}
	release, err := NewStore(dir).Lock()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(0)
	}
	_ = release()
	fmt.Println("locked")
	os.Exit(0)
}

// TestLockReportsFailedPIDWrite: a lock whose PID could not be written is
// not a lock another weave can name, so Lock fails and says why.
func TestLockReportsFailedPIDWrite(t *testing.T) {
	s := newStore(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLockNoRoom$")
	cmd.Env = append(os.Environ(), "WEAVE_TEST_LOCK_NO_ROOM="+filepath.Dir(s.Path()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.Contains(got, "error: lock project") || !strings.Contains(got, "write pid") || !strings.Contains(got, "file too large") {
		t.Fatalf("Lock with no room for the PID printed %q, want a lock project ... write pid error naming EFBIG", got)
	}
}
