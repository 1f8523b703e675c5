package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestUndumpable makes the test process non-dumpable, as weave makes
// itself, and checks what a child of the same user can then read of it:
// not its environ (when the test is not root; root reads everything, and
// cmd/weave's TestNoSecretThroughProc runs weave as another user for
// that), while a child still starts and reads its own.
func TestUndumpable(t *testing.T) {
	if err := Undumpable(); err != nil {
		t.Fatal(err)
	}
	d, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, 3 /* PR_GET_DUMPABLE */, 0, 0)
	if errno != 0 || d != 0 {
		t.Fatalf("PR_GET_DUMPABLE = %d (%v), want 0", d, errno)
	}
	if _, err := os.ReadFile("/proc/self/environ"); err != nil {
		t.Errorf("weave can no longer read its own /proc: %v", err)
	}
	self := strconv.Itoa(os.Getpid())
	cmd := exec.Command("sh", "-c", `tr '\0' '\n' < /proc/$$/environ | grep -c . ; cat /proc/`+self+`/environ`)
	out, err := cmd.CombinedOutput()
	if n, _ := strconv.Atoi(strings.SplitN(string(out), "\n", 2)[0]); n == 0 {
		t.Errorf("the child could not read its own environ:\n%s", out)
	}
	if os.Geteuid() == 0 {
		t.Logf("root reads every environ; only the child's own read is checked here")
		return
	}
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("a child of the same user read the non-dumpable parent's environ: %v\n%s", err, out)
	}
}
