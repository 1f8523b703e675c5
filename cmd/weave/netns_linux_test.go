package main

// A network of the test's own, for running processes as separate hosts
// would be: a bridge on this machine with an address of a /24 no interface
// here uses, and hosts, each a network namespace joined to the bridge by a
// veth pair alone (a host reaches this machine's address on the bridge and
// the other hosts, nothing else: no default route, its own loopback). A
// host's link can be cut and healed from this machine, the fault of a
// separate host: a partition, not a kill.
//
// Making one needs CAP_NET_ADMIN and CAP_SYS_ADMIN (ip netns add mounts) and
// iproute2's ip; without them the test is skipped saying why, except that
// with CI=true a machine that grants the capabilities must also have ip
// (.ci/run installs it), so that CI never skips the suite for want of a
// tool. A kernel that refuses a namespace, a bridge or a lock is a machine
// that does not allow it: the test is skipped saying so.
//
// Names carry the test process's id (namespaces weavet-<pid>-<lab>-<host>,
// links wvb/wvh<pid in base 36>x<lab>...), so that a lab left by a killed
// run is removed by the next one, once its process is gone, and a lab of a
// test running beside it is not.

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	netnsPrefix  = "weavet-"
	netLinkShort = "wv" // then b (bridge) or h/w (veth ends)
)

var netLabSeq atomic.Int64

// netLab is one test's network: the bridge and its hosts.
type netLab struct {
	t      testing.TB
	tag    string // <pid base 36>x<seq base 36>
	bridge string
	// HostIP is this machine's address on the bridge: what a host reaches.
	HostIP string
	prefix string // 10.a.b.
	hosts  []*netHost
	closed bool
}

// netHost is a network namespace joined to its lab's bridge.
type netHost struct {
	lab  *netLab
	NS   string // the namespace's name
	link string // the veth end on this machine, a port of the bridge
	peer string // the veth end inside the namespace
	// IP is the host's address on the bridge.
	IP string
}

// netLabRefusal says why this machine cannot make a lab, or "" when it
// can try.
func netLabRefusal() string {
	if _, err := exec.LookPath("ip"); err != nil {
		return "iproute2's ip is not installed"
	}
	if !hasCaps(12, 21) { // CAP_NET_ADMIN, CAP_SYS_ADMIN
		return "making network namespaces needs CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root)"
	}
	return ""
}

// hasCaps reports whether this process's effective capabilities hold each
// of bits.
func hasCaps(bits ...uint) bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		eff, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return false
		}
		for _, b := range bits {
			if eff&(1<<b) == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// netLabSkip skips the test for why, or fails it on CI (CI=true) when the
// machine grants the capabilities: there the suite must run.
func netLabSkip(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" && hasCaps(12, 21) {
		t.Fatalf("separate hosts: %s (CI=true on a machine that grants CAP_NET_ADMIN: this suite must run here)", why)
	}
	t.Skipf("separate hosts need network namespaces: %s", why)
}

// newNetLab makes a lab for t, removed when t ends (Close).
func newNetLab(t testing.TB) *netLab {
	t.Helper()
	if why := netLabRefusal(); why != "" {
		netLabSkip(t, why)
	}
	unlock, err := netLabLock()
	if err != nil {
		t.Skipf("separate hosts: this machine does not allow them: %v", err)
	}
	defer unlock()
	netLabSweep()
	prefix, err := freeSubnet()
	if err != nil {
		t.Skipf("separate hosts: this machine does not allow them: %v", err)
	}
	l := &netLab{t: t, tag: strconv.FormatInt(int64(os.Getpid()), 36) + "x" + strconv.FormatInt(netLabSeq.Add(1), 36), prefix: prefix, HostIP: prefix + "1"}
	l.bridge = netLinkShort + "b" + l.tag
	t.Cleanup(func() {
		for _, msg := range l.Close() {
			t.Error(msg)
		}
	})
	if err := ipRun("link", "add", l.bridge, "type", "bridge"); err != nil {
		t.Skipf("separate hosts: this machine does not allow them: %v", err)
	}
	for _, args := range [][]string{{"addr", "add", l.HostIP + "/24", "dev", l.bridge}, {"link", "set", l.bridge, "up"}} {
		if err := ipRun(args...); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// Host adds a host to the lab: a namespace of its own, its link up.
func (l *netLab) Host(t testing.TB) *netHost {
	t.Helper()
	k := len(l.hosts) + 1
	h := &netHost{lab: l,
		NS:   fmt.Sprintf("%s%d-%s-%d", netnsPrefix, os.Getpid(), l.tag[strings.IndexByte(l.tag, 'x')+1:], k),
		link: fmt.Sprintf("%sh%sh%d", netLinkShort, l.tag, k),
		peer: fmt.Sprintf("%sw%sh%d", netLinkShort, l.tag, k),
		IP:   l.prefix + strconv.Itoa(k+1),
	}
	if err := ipRun("netns", "add", h.NS); err != nil {
		t.Skipf("separate hosts: this machine does not allow them: %v", err)
	}
	l.hosts = append(l.hosts, h)
	for _, args := range [][]string{
		{"link", "add", h.link, "type", "veth", "peer", "name", h.peer},
		{"link", "set", h.peer, "netns", h.NS},
		{"link", "set", h.link, "master", l.bridge},
		{"link", "set", h.link, "up"},
		{"-n", h.NS, "addr", "add", h.IP + "/24", "dev", h.peer},
		{"-n", h.NS, "link", "set", h.peer, "up"},
		{"-n", h.NS, "link", "set", "lo", "up"},
	} {
		if err := ipRun(args...); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// Cut takes the host's link down on this machine's side: from then on
// nothing passes between the host and anyone, and neither side is told.
func (h *netHost) Cut(t testing.TB) {
	t.Helper()
	if err := ipRun("link", "set", h.link, "down"); err != nil {
		t.Fatal(err)
	}
}

// Heal brings the host's link back up.
func (h *netHost) Heal(t testing.TB) {
	t.Helper()
	if err := ipRun("link", "set", h.link, "up"); err != nil {
		t.Fatal(err)
	}
}

// Command is argv run on the host: in its namespace, in a mount namespace
// of its own where each of hide is an empty directory (a tmpfs over it:
// what another machine would not have), from the directory dir, with the
// environment env and nothing else.
func (h *netHost) Command(hide []string, dir string, env []string, argv ...string) *exec.Cmd {
	// ip netns exec gives the command a mount namespace of its own (a
	// slave of this machine's): the tmpfs mounts stay in it.
	script := `n=$1; shift
while [ "$n" -gt 0 ]; do mount -t tmpfs -o size=1m,mode=0755 weave-elsewhere "$1" || exit 97; shift; n=$((n-1)); done
cd "$1" || exit 97; shift
exec "$@"`
	args := append([]string{"netns", "exec", h.NS, "sh", "-c", script, "sh", strconv.Itoa(len(hide))}, hide...)
	args = append(append(args, dir), argv...)
	ip, _ := exec.LookPath("ip")
	cmd := exec.Command(ip, args...)
	cmd.Env = env
	// ip and sh exec the command in place: it dies with the test process,
	// not left running in a namespace nobody removes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Pids lists the processes in the host's namespace.
func (h *netHost) Pids() []int {
	out, err := exec.Command("ip", "netns", "pids", h.NS).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Close removes the lab: the hosts' namespaces (their veths go with them)
// and the bridge. It returns what was wrong: a process still running in a
// host's namespace (waited for a bounded moment, then killed), or a name
// of the lab that could not be removed. A second Close does nothing.
func (l *netLab) Close() []string {
	if l.closed {
		return nil
	}
	l.closed = true
	var bad []string
	for _, h := range l.hosts {
		deadline := time.Now().Add(10 * time.Second)
		pids := h.Pids()
		for len(pids) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			pids = h.Pids()
		}
		for _, pid := range pids {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			bad = append(bad, fmt.Sprintf("process %d %q still ran in namespace %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), h.NS))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// The veth goes with its namespace only once the kernel has torn
		// the namespace down, later: deleting it first leaves nothing to
		// wait for.
		if err := ipRun("link", "del", h.link); err != nil {
			bad = append(bad, err.Error())
		}
		if err := ipRun("netns", "del", h.NS); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if err := ipRun("link", "del", l.bridge); err != nil {
		bad = append(bad, err.Error())
	}
	if left := l.leftNames(); len(left) > 0 {
		bad = append(bad, "left after the lab was removed: "+strings.Join(left, ", "))
	}
	return bad
}

// leftNames lists the namespaces and links of the lab that exist.
func (l *netLab) leftNames() []string {
	var left []string
	ns, links := netNames()
	for _, h := range l.hosts {
		if ns[h.NS] {
			left = append(left, "namespace "+h.NS)
		}
		if links[h.link] {
			left = append(left, "link "+h.link)
		}
	}
	if links[l.bridge] {
		left = append(left, "bridge "+l.bridge)
	}
	return left
}

// netNames are the network namespaces and this namespace's links.
func netNames() (ns, links map[string]bool) {
	ns, links = map[string]bool{}, map[string]bool{}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				ns[f[0]] = true
			}
		}
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		links[i.Name] = true
	}
	return ns, links
}

// netLabSweep removes what labs of test processes that are gone left
// behind (a run killed before its cleanup): namespaces by the process id
// in their name, links by the one in theirs.
func netLabSweep() {
	ns, links := netNames()
	for name := range ns {
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || alive(pid) {
			continue
		}
		// What still runs there was the dead test's.
		for _, p := range (&netHost{NS: name}).Pids() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = ipRun("netns", "del", name)
	}
	for name := range links {
		rest, ok := strings.CutPrefix(name, netLinkShort)
		if !ok || len(rest) < 2 || !strings.ContainsRune("bh", rune(rest[0])) {
			continue
		}
		pid36, _, ok := strings.Cut(rest[1:], "x")
		pid, err := strconv.ParseInt(pid36, 36, 64)
		if ok && err == nil && !alive(int(pid)) {
			_ = ipRun("link", "del", name)
		}
	}
}

// freeSubnet picks 10.213.N.0/24 with N such that no address of this
// machine's interfaces lies in it; netLabLock keeps two tests from picking
// the same.
func freeSubnet() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("list this machine's addresses: %w", err)
	}
	for n := 1; n < 255; n++ {
		_, subnet, _ := net.ParseCIDR(fmt.Sprintf("10.213.%d.0/24", n))
		used := false
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && (subnet.Contains(ipn.IP) || ipn.Contains(subnet.IP)) {
				used = true
			}
		}
		if !used {
			return fmt.Sprintf("10.213.%d.", n), nil
		}
	}
	return "", fmt.Errorf("no free subnet in 10.213.0.0/16")
}

// netLabLock serialises making labs across test processes (the sweep and
// the choice of a subnet).
func netLabLock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "weave-netlab.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file of the labs: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock the labs: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

// ipRun runs ip with args.
func ipRun(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// TestNetLab: a host of a lab reaches a server on this machine's address
// on the bridge and nothing else (this machine's loopback is not its own;
// there is no route out), sees an empty directory where this machine hides
// one, loses the server while its link is cut and finds it again once it
// heals; after Close, no namespace or link of the lab is left.
func TestNetLab(t *testing.T) {
	l := newNetLab(t)
	h := l.Host(t)
	srv, err := net.Listen("tcp", l.HostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	loop, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	got := make(chan string, 4)
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			got <- strings.TrimSpace(line)
			_ = c.Close()
		}
	}()
	hidden := t.TempDir()
	if err := os.WriteFile(filepath.Join(hidden, "secret"), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	on := func(script string) (string, error) {
		out, err := h.Command([]string{hidden}, "/", env, "bash", "-c", script).CombinedOutput()
		return string(out), err
	}
	send := func(addr, word string) (string, error) {
		return on("timeout 2 bash -c 'echo " + word + " > /dev/tcp/" + strings.Replace(addr, ":", "/", 1) + "'")
	}
	if out, err := send(srv.Addr().String(), "hello"); err != nil {
		t.Fatalf("the host could not reach %s: %v %s", srv.Addr(), err, out)
	}
	if w := <-got; w != "hello" {
		t.Fatalf("the server read %q", w)
	}
	if out, err := send(loop.Addr().String(), "x"); err == nil {
		t.Fatalf("the host reached this machine's loopback %s: %s", loop.Addr(), out)
	}
	if out, err := send("192.0.2.1:9", "x"); err == nil || !strings.Contains(out, "unreachable") {
		t.Fatalf("the host reached out past the bridge (%v): %s", err, out)
	}
	if out, err := on("ls -A " + hidden + "; cat " + hidden + "/secret"); err == nil || strings.Contains(out, "s\n") {
		t.Fatalf("the host read the hidden directory: %s", out)
	}
	h.Cut(t)
	if out, err := send(srv.Addr().String(), "cut"); err == nil {
		t.Fatalf("the host reached the server through a cut link: %s", out)
	}
	h.Heal(t)
	if out, err := send(srv.Addr().String(), "healed"); err != nil {
		t.Fatalf("after the link healed: %v %s", err, out)
	}
	if w := <-got; w != "healed" {
		t.Fatalf("the server read %q after the heal", w)
	}
	if bad := l.Close(); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}
