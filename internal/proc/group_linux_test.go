//go:build linux

package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitGone fails the test unless process group pgid has no live member
// once the call returns (a killed process is gone at once, bar scheduling).
func waitGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a failure guard only
	for len(groupMembers(pgid)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v", pgid, groupMembers(pgid))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestGroupKillsWhatTheLeaderLeft(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "(sleep 300; echo late >> late.txt) & echo '{}'")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	// Without the group kill, Wait would wait for the child holding stdout.
	cmd.WaitDelay = time.Minute
	g, err := (*Set)(nil).Start(cmd, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if got := strings.TrimSpace(out.String()); got != "{}" {
		t.Errorf("stdout = %q, want {}", got)
	}
	waitGone(t, g.PID())
}

func TestStopTermThenKill(t *testing.T) {
	set := NewSet(200*time.Millisecond, nil)
	cmd := exec.Command("bash", "-c", "trap '' INT TERM; echo ready; sleep 30")
	r, w, _ := os.Pipe()
	cmd.Stdout = w
	g, err := set.Start(cmd, "trapping block")
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	buf := make([]byte, 6)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { waited <- g.Wait(ctx) }()
	cancel()
	if err := set.Close(context.Background()); err != nil {
		t.Fatalf("Close = %v", err)
	}
	// Close returned only after the group was gone.
	if m := groupMembers(g.PID()); len(m) > 0 {
		t.Fatalf("Close returned with the group still running: %v", m)
	}
	err = <-waited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("Wait = %v, want killed by SIGKILL (it ignores SIGTERM)", err)
	}
	if _, err := set.Start(exec.Command("true"), "late"); err != ErrClosed {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

func TestLedgerReapsGroupsOfADeadHost(t *testing.T) {
	dir := t.TempDir()
	l := NewLedger(dir, filepath.Join(dir, "run"))
	// A group left by a host that is gone: started here, recorded under a
	// host PID that has exited.
	left := exec.Command("sh", "-c", "sleep 300 & sleep 300")
	left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	go left.Wait()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := `{"pgid":` + strconv.Itoa(left.Process.Pid) + `,"start":` + strconv.FormatUint(startTime(left.Process.Pid), 10) +
		`,"host_pid":` + strconv.Itoa(dead.Process.Pid) + `,"what":"block"}`
	if err := os.WriteFile(filepath.Join(dir, "run", "x.json"), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	// A group of this (live) host is left alone.
	mine := exec.Command("sleep", "300")
	g, err := NewSet(0, l).Start(mine, "mine")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Stop(); _ = g.Wait(context.Background()) }()

	reaped, err := l.Reap()
	if err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || reaped[0].PGID != left.Process.Pid || reaped[0].Killed == 0 || reaped[0].Err != nil {
		t.Fatalf("Reap() = %+v, want the dead host's group with its processes killed", reaped)
	}
	waitGone(t, left.Process.Pid)
	if len(groupMembers(g.PID())) == 0 {
		t.Fatal("Reap killed a group of a live host")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "run", "*.json"))
	if len(files) != 1 {
		t.Errorf("ledger files after Reap = %v, want only the live group's", files)
	}
}

func TestLedgerLeavesAReusedGroupNumberAlone(t *testing.T) {
	// The recorded leader start time does not match the live process with
	// that number: its number was reused.
	other := exec.Command("sleep", "300")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	n, err := killLeftGroup(other.Process.Pid, startTime(other.Process.Pid)-1)
	if err == nil || n != 0 {
		t.Fatalf("killLeftGroup(reused) = %d, %v, want 0 and an error", n, err)
	}
	if len(groupMembers(other.Process.Pid)) == 0 {
		t.Fatal("a reused group number was killed")
	}
}

func TestLedgerKeepsOneFileOfTheLiveGroups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	l := NewLedger(filepath.Dir(dir), dir)
	set := NewSet(0, l)
	a, err := set.Start(exec.Command("sleep", "300"), "first")
	if err != nil {
		t.Fatal(err)
	}
	b, err := set.Start(exec.Command("sleep", "300"), "second")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = b.Wait(context.Background()) }()
	file := filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")
	groups := func() []entry {
		t.Helper()
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var out []entry
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var e entry
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("ledger line %q: %v", line, err)
			}
			if e.HostPID != os.Getpid() {
				t.Fatalf("ledger line %q names host %d, want %d", line, e.HostPID, os.Getpid())
			}
			if e.PGID != 0 {
				out = append(out, e)
			}
		}
		return out
	}
	if g := groups(); len(g) != 2 || g[0].What == g[1].What {
		t.Fatalf("ledger with two groups running = %+v, want both", g)
	}
	a.Stop()
	_ = a.Wait(context.Background())
	if g := groups(); len(g) != 1 || g[0].PGID != b.PID() || g[0].What != "second" || g[0].Start == 0 {
		t.Fatalf("ledger after the first ended = %+v, want the second alone, with its start time", g)
	}
	// A line cut by a host that died mid-write is skipped, the others read.
	data, _ := os.ReadFile(file)
	_, entries, alive := ledgerEntries(append(data, []byte(`{"pgid":12`)...))
	if !alive || entries != nil {
		t.Fatalf("ledgerEntries(this host's file) = %v, %v, want it left alone", entries, alive)
	}
	if err := set.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ledger file after Close: %v, want it removed", err)
	}
}

func TestLedgerReadsACutLineOfADeadHost(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host := `{"host_pid":` + strconv.Itoa(dead.Process.Pid) + "}\n"
	group := `{"pgid":4242,"start":1,"host_pid":` + strconv.Itoa(dead.Process.Pid) + `,"what":"block"}` + "\n"
	_, entries, alive := ledgerEntries([]byte(host + group + `{"pgid":43`))
	if alive || len(entries) != 1 || entries[0].PGID != 4242 || entries[0].What != "block" {
		t.Fatalf("ledgerEntries = %+v, %v, want the whole group line of a dead host only", entries, alive)
	}
}

// A host killed between starting a group and recording it leaves a group
// its file lacks; the group's processes carry the host's mark, by which
// the next start finds and ends them.
func TestLedgerReapsAGroupItNeverRecorded(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	host := entry{HostPID: dead.Process.Pid, HostStart: 7}
	line, _ := json.Marshal(host)
	if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(host.HostPID)+".json"), append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its leader gone, as the parent-death signal leaves it, and a child
	// left running.
	left := exec.Command("sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!")
	left.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	left.Env = append(os.Environ(), markOf(host.HostPID, host.HostStart))
	out, err := left.Output()
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }()
	// A process marked by another host is left alone.
	other := exec.Command("sleep", "300")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	other.Env = append(os.Environ(), markOf(host.HostPID, host.HostStart+1))
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()

	reaped, err := NewLedger(filepath.Dir(dir), dir).Reap()
	if err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || reaped[0].PGID != left.Process.Pid || reaped[0].Killed != 1 {
		t.Fatalf("Reap() = %+v, want the unrecorded group %d with its one process killed", reaped, left.Process.Pid)
	}
	waitGone(t, left.Process.Pid)
	if len(groupMembers(other.Process.Pid)) == 0 {
		t.Fatal("Reap killed a process marked by another host")
	}
}

func TestSetMarksItsChildren(t *testing.T) {
	root := t.TempDir()
	l := NewLedger(root, filepath.Join(root, "run"))
	set := NewSet(0, l)
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", "echo $"+markVar)
	cmd.Env = append(os.Environ(), markVar+"=inherited")
	cmd.Stdout = &out
	g, err := set.Start(cmd, "env")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := set.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, want, _ := strings.Cut(markOf(l.self, l.start), "=")
	if got := strings.TrimSpace(out.String()); got != want {
		t.Errorf("%s in a child = %q, want this host's %q", markVar, got, want)
	}
}

// A Start under way when Close is called is waited for: its group is
// stopped and gone by the time Close returns, not left to outlive it. The
// child says it runs before Close is called, which can be before Start
// has taken the group in (the window is widest on a busy machine).
func TestCloseWaitsForAStartUnderWay(t *testing.T) {
	for range 20 {
		set := NewSet(0, nil)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", "echo ready; exec sleep 300")
		cmd.Stdout = w
		started := make(chan *Group, 1)
		go func() {
			g, err := set.Start(cmd, "racing")
			w.Close()
			if err != nil {
				started <- nil
				return
			}
			started <- g
			_ = g.Wait(context.Background())
		}()
		buf := make([]byte, 6)
		_, _ = r.Read(buf)
		r.Close()
		if err := set.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if g := <-started; g != nil {
			if m := groupMembers(g.PID()); len(m) > 0 {
				t.Fatalf("Close returned with a group started beside it still running: %v", m)
			}
		}
	}
}
