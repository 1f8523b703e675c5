//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// groupAttr puts a child in its own process group and has the kernel kill it
// when weave dies, even by SIGKILL. The signal fires when the thread that
// started the child exits; Go ends only threads whose goroutine locked them
// and returned, which no caller of this package does.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupAttrOn adds groupAttr's settings to the attributes a caller gave
// (a sandbox's namespaces), or returns groupAttr's when it gave none.
func groupAttrOn(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	if a == nil {
		return groupAttr()
	}
	a.Setpgid, a.Pgid, a.Pdeathsig = true, 0, syscall.SIGKILL
	return a
}

// ChildAttr is for a child that stays in weave's process group (a plugin):
// only the parent-death signal.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// termGroup sends SIGTERM, then SIGCONT: a group stopped with weave
// (Ctrl-Z) acts on the SIGTERM only once continued.
func termGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
}
func killGroup(pgid int)     { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
func suspendGroup(pgid int)  { _ = syscall.Kill(-pgid, syscall.SIGSTOP) }
func continueGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGCONT) }

// leaderExit returns a channel closed when the process pid has exited,
// without reaping it (waitid with WNOWAIT), so that cmd.Wait still gets its
// status.
func leaderExit(pid int) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		defer close(c)
		var info [128]byte // siginfo_t
		for {
			_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(pid),
				uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|0x1000000 /* WNOWAIT */, 0, 0)
			if errno != syscall.EINTR {
				return
			}
		}
	}()
	return c
}

// BecomeSubreaper makes weave the parent of every orphaned descendant
// (PR_SET_CHILD_SUBREAPER), so that a process that escaped its group is
// still weave's to end with KillChildren.
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, 36 /* PR_SET_CHILD_SUBREAPER */, 1, 0); errno != 0 {
		return fmt.Errorf("become child subreaper: %w", errno)
	}
	return nil
}

// Undumpable makes weave non-dumpable (PR_SET_DUMPABLE 0), so that a
// process of the same user that is not root, a model's bash call or a
// plugin among them, cannot read weave's /proc/<pid>/environ (which keeps
// the environment weave started with, whatever os.Unsetenv does later:
// the model key, the bus token), nor its memory, nor attach to it with
// ptrace. It is process-wide and lasts until weave exits. Weave still
// reads its own /proc/self; a child is dumpable again once it execs, and
// has none of weave's secrets in its own environment (Environ). The only
// other effect is that weave leaves no core dump.
func Undumpable() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, 4 /* PR_SET_DUMPABLE */, 0, 0); errno != 0 {
		return fmt.Errorf("make weave non-dumpable: %w", errno)
	}
	return nil
}

// KillChildren kills every child process weave still has (with a
// subreaper, the orphans of its descendants too) and waits, up to timeout,
// until none is left running. It is for the last moments of the process,
// when no exec.Cmd is waiting any more.
func KillChildren(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	self := os.Getpid()
	for {
		left := 0
		for _, pid := range children(self) {
			st, ok := readStat(pid)
			if !ok {
				continue
			}
			var ws syscall.WaitStatus
			if st.state == 'Z' {
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
				continue
			}
			left++
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
		if left == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// children lists pid's children from /proc/<pid>/task/*/children.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// procStat is what weave reads of /proc/<pid>/stat.
type procStat struct {
	state byte
	pgrp  int
	start uint64 // clock ticks after boot
}

func readStat(pid int) (procStat, bool) {
	var buf [512]byte
	b, ok := readProcFile("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if !ok {
		return procStat{}, false
	}
	// The command name is in parentheses and may hold anything; the fields
	// after the last ')' are plain, separated by one space each.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	var st procStat
	var err1, err2 error = errors.New("missing"), errors.New("missing")
	field := 0
	for rest := bytes.TrimSpace(b[i+1:]); len(rest) > 0 && field <= 19; field++ {
		f := rest
		if j := bytes.IndexByte(rest, ' '); j >= 0 {
			f, rest = rest[:j], bytes.TrimLeft(rest[j+1:], " ")
		} else {
			rest = nil
		}
		switch field {
		case 0:
			if len(f) == 0 {
				return procStat{}, false
			}
			st.state = f[0]
		case 2:
			st.pgrp, err1 = strconv.Atoi(string(f))
		case 19:
			st.start, err2 = strconv.ParseUint(string(f), 10, 64)
		}
	}
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return st, true
}

// readProcFile reads a small file of /proc into buf with plain system
// calls (a process is started and watched per command: the runtime's
// poller has nothing to do with these files), or whole when it is larger.
func readProcFile(path string, buf []byte) ([]byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if m == 0 {
			return buf[:n], true
		}
		n += m
	}
	b, err := os.ReadFile(path)
	return b, err == nil
}

// startTime is the identity of a running process: its start time in clock
// ticks after boot, or 0 when it is not running.
func startTime(pid int) uint64 {
	st, ok := readStat(pid)
	if !ok || st.state == 'Z' {
		return 0
	}
	return st.start
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []int {
	des, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.pgrp == pgid && st.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// killLeftGroup kills a recorded group after checking that its number still
// names the group that was recorded: a live leader with another start time
// means the number was reused. (While any member lives, the kernel does not
// give its group's number to a new process.) It waits, up to a second, for
// the members to die.
func killLeftGroup(pgid int, leaderStart uint64) (int, error) {
	members := groupMembers(pgid)
	if len(members) == 0 {
		return 0, nil
	}
	if st := startTime(pgid); st != 0 && leaderStart != 0 && st != leaderStart {
		return 0, errors.New("its process group number now belongs to another process; left alone")
	}
	killGroup(pgid)
	deadline := time.Now().Add(time.Second)
	for len(groupMembers(pgid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return len(members), nil
}

// alive reports whether the process pid that started at start is running.
func alive(pid int, start uint64) bool {
	st := startTime(pid)
	return st != 0 && (start == 0 || st == start)
}

// killMarked kills the process group of every running process whose
// environment holds mark (a host's processes that its ledger may lack),
// this process and its own group excepted, and waits, up to a second, for
// them to die. It returns the groups it killed and how many marked
// processes each had.
func killMarked(mark string) map[int]int {
	want := []byte(mark)
	self := os.Getpid()
	own := syscall.Getpgrp()
	des, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	pgids := map[int]int{}
	var pids []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid == self {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.state == 'Z' {
			continue
		}
		env, err := os.ReadFile("/proc/" + de.Name() + "/environ")
		if err != nil || !hasEntry(env, want) {
			continue
		}
		pids = append(pids, pid)
		if st.pgrp == own {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			continue
		}
		killGroup(st.pgrp)
		pgids[st.pgrp]++
	}
	deadline := time.Now().Add(time.Second)
	for _, pid := range pids {
		for startTime(pid) != 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return pgids
}

// hasEntry reports whether the NUL-separated environment block env holds
// the entry e.
func hasEntry(env, e []byte) bool {
	for len(env) > 0 {
		kv, rest, _ := bytes.Cut(env, []byte{0})
		if bytes.Equal(kv, e) {
			return true
		}
		env = rest
	}
	return false
}
