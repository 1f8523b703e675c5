//go:build slow && linux

package main

// `weave worker` processes as separate hosts: each in a network namespace
// of its own (netns_linux_test.go), joined to this machine by a veth pair
// alone, with its own home, config, cache, temp and working directories
// and its own copy of the binary, and with the coordinator's directories
// (the project, its config) hidden from it: code reaches it only as
// bundles over the bus. The nats-server is embedded, with JetStream, in
// operator mode: the coordinator and each worker join with a creds file of
// their own carrying docs/workers-nats.md's least-privilege permissions,
// and it listens on this machine's address on the lab's bridge alone.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/host/run"
)

// hostsWorld is one test's machines: the lab, the nats-server on its
// bridge, the coordinator's own directory (its config, creds and the
// marks its verify blocks leave) and the workers.
type hostsWorld struct {
	lab   *netLab
	url   string
	bin   string
	coord string // the coordinator's directory, hidden from every worker
	issue func(user string, p jwt.Permissions) []byte
	hosts []*farHost
}

// farHost is a `weave worker` on a host of the lab.
type farHost struct {
	name string
	net  *netHost
	root string // everything the host has: home, config, repo, bin, ...
	home string
	proc *workerProc
	errs *bytes.Buffer
}

// newHostsWorld starts the lab and the nats-server, and gives the
// coordinator its creds and a config with a lease of lease.
func newHostsWorld(t *testing.T, lease time.Duration) *hostsWorld {
	t.Helper()
	w := &hostsWorld{lab: newNetLab(t), bin: buildWeave(t), coord: t.TempDir()}
	w.url, w.issue = operatorNATS(t, w.lab.HostIP)
	creds := filepath.Join(w.coord, "coordinator.creds")
	var p jwt.Permissions
	p.Pub.Allow.Add("weave.>", "$JS.API.>", "$KV.>", "$O.WEAVE_BUNDLES.>", "$JS.FC.>", "$JS.ACK.>", "_INBOX.>")
	p.Sub.Allow.Add("weave.>", "_INBOX.>")
	if err := os.WriteFile(creds, w.issue("coordinator", p), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("bus:\n  nats:\n    creds_file: %s\nrun:\n  lease: %s\n", creds, lease)
	if err := os.MkdirAll(filepath.Join(w.coord, "config", "weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.coord, "config", "weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(w.coord, "marks"), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// operatorNATS starts a nats-server with JetStream in operator mode,
// listening on ip alone, and returns its URL and a function that issues a
// creds file for a user of its account with permissions p.
func operatorNATS(t *testing.T, ip string) (string, func(string, jwt.Permissions) []byte) {
	t.Helper()
	must := func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	op, _ := nkeys.CreateOperator()
	opJWT := must(jwt.NewOperatorClaims(must(op.PublicKey())).Encode(op))
	sys, _ := nkeys.CreateAccount()
	sysPub := must(sys.PublicKey())
	sysJWT := must(jwt.NewAccountClaims(sysPub).Encode(op))
	acct, _ := nkeys.CreateAccount()
	acctPub := must(acct.PublicKey())
	ac := jwt.NewAccountClaims(acctPub)
	ac.Name = "WEAVE"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	acctJWT := must(ac.Encode(op))
	conf := fmt.Sprintf("operator: %s\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n  %s: %s\n  %s: %s\n}\n",
		opJWT, sysPub, sysPub, sysJWT, acctPub, acctJWT)
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats config: %v", err)
	}
	opts.Host, opts.Port = ip, server.RANDOM_PORT
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(bustest.Deadline) {
		t.Fatal("nats-server not ready")
	}
	issue := func(name string, p jwt.Permissions) []byte {
		t.Helper()
		user, _ := nkeys.CreateUser()
		uc := jwt.NewUserClaims(must(user.PublicKey()))
		uc.Name = name
		uc.IssuerAccount = acctPub
		uc.Permissions = p
		seed, _ := user.Seed()
		creds, err := jwt.FormatUserConfig(must(uc.Encode(acct)), seed)
		if err != nil {
			t.Fatal(err)
		}
		return creds
	}
	return fmt.Sprintf("nats://%s:%d", ip, srv.Addr().(*net.TCPAddr).Port), issue
}

// workerPermissions are docs/workers-nats.md's permissions of worker name.
func workerPermissions(name string) jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add("weave.pub.open.*", "weave.req.open.*", "$JS.API.>", "$KV.WEAVE_SUBS.>", "$KV.WEAVE_WORKERS."+name, "$O.WEAVE_BUNDLES.>", "$JS.FC.>", "$JS.ACK.>", "_INBOX.>")
	p.Pub.Deny.Add("$KV.WEAVE_LEASES.>")
	p.Sub.Allow.Add("weave.pub.open.*", "weave.req.open.*", "_INBOX.>")
	return p
}

// startHost makes a host and starts `weave worker` there (one slot, label
// far) with a disk of its own: the binary copied in, its own home and XDG
// directories, its repository, its creds; the coordinator's directories
// hidden (each of hide).
func (w *hostsWorld) startHost(t *testing.T, name string, hide []string) *farHost {
	t.Helper()
	h := &farHost{name: name, net: w.lab.Host(t), root: t.TempDir(), errs: &bytes.Buffer{}}
	h.home = filepath.Join(h.root, "home")
	for _, d := range []string{"home", "config", "cache", "state", "data", "tmp", "work", "bin"} {
		if err := os.MkdirAll(filepath.Join(h.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(h.root, "bin", "weave")
	data, err := os.ReadFile(w.bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(h.root, "worker.creds")
	if err := os.WriteFile(creds, w.issue(name, workerPermissions(name)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8",
		"HOME=" + h.home, "TMPDIR=" + filepath.Join(h.root, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(h.root, "config"), "XDG_CACHE_HOME=" + filepath.Join(h.root, "cache"),
		"XDG_STATE_HOME=" + filepath.Join(h.root, "state"), "XDG_DATA_HOME=" + filepath.Join(h.root, "data"),
		// The blocks of these plans write to the worker's home.
		"WEAVE_SANDBOX_MODE=off",
	}
	cmd := h.net.Command(hide, filepath.Join(h.root, "work"), env, bin, "worker", "--bus", w.url, "--creds", creds,
		"--name", name, "--repo", filepath.Join(h.root, "repo"), "--labels", "far", "--slots", "1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = h.errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.proc = &workerProc{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.proc.mu.Lock()
			h.proc.all = append(h.proc.all, sc.Text())
			h.proc.mu.Unlock()
			select {
			case h.proc.lines <- sc.Text():
			default:
			}
		}
		close(h.proc.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	h.proc.waitLine(t, "joined", func() string { return h.errs.String() })
	w.hosts = append(w.hosts, h)
	return h
}

// said is everything the worker printed.
func (h *farHost) said() string {
	h.proc.mu.Lock()
	defer h.proc.mu.Unlock()
	return strings.Join(h.proc.all, "\n")
}

// stop ends the worker as Ctrl-C does and waits for it.
func (h *farHost) stop(t *testing.T) {
	t.Helper()
	_ = h.proc.cmd.Process.Signal(os.Interrupt)
	if err := h.proc.cmd.Wait(); err != nil {
		t.Errorf("worker %s after Ctrl-C: %v\n%s\n%s", h.name, err, h.said(), h.errs.String())
	}
}

// finish stops the workers and removes the lab, failing the test if a
// process was left in a host's namespace or a namespace or link remains.
func (w *hostsWorld) finish(t *testing.T) {
	t.Helper()
	start := time.Now()
	for _, h := range w.hosts {
		h.stop(t)
	}
	stopped := time.Now()
	for _, msg := range w.lab.Close() {
		t.Error(msg)
	}
	t.Logf("workers stopped in %s, lab removed in %s", stopped.Sub(start).Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
	ns, links := netNames()
	for _, h := range w.hosts {
		if ns[h.net.NS] || links[h.net.link] {
			t.Errorf("host %s's namespace or link is left", h.name)
		}
	}
}

// timedEvent is a --json event of the coordinator and when it was read.
type timedEvent struct {
	run.Event
	at time.Time
}

// coordRun is a `weave start-work --json` of the coordinator, its events
// read as they come.
type coordRun struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	mu     sync.Mutex
	evs    []timedEvent
	news   chan struct{}
	done   chan struct{}
}

// startCoord starts `weave start-work plan --json args...` in dir, with
// the coordinator's config.
func (w *hostsWorld) startCoord(t *testing.T, dir string, args ...string) *coordRun {
	t.Helper()
	cmd := exec.Command(w.bin, append([]string{"--dir", dir, "start-work", "--json"}, args...)...)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "WEAVE_") && !strings.HasPrefix(k, "XDG_") {
			env = append(env, kv)
		}
	}
	cmd.Env = trustingEnv(t, append(env, "XDG_CONFIG_HOME="+filepath.Join(w.coord, "config")))
	r := &coordRun{cmd: cmd, news: make(chan struct{}, 1), done: make(chan struct{})}
	cmd.Stderr = &r.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-r.done })
	guard := time.AfterFunc(4*time.Minute, func() { _ = cmd.Process.Kill() })
	go func() {
		defer close(r.done)
		defer guard.Stop()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			var ev run.Event
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			r.mu.Lock()
			r.evs = append(r.evs, timedEvent{ev, time.Now()})
			r.mu.Unlock()
			select {
			case r.news <- struct{}{}:
			default:
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}()
	return r
}

// events is what the run printed so far.
func (r *coordRun) events() []timedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]timedEvent(nil), r.evs...)
}

// waitEvent waits for the first event that match accepts, failing the test
// if the run ends or a minute and a half passes first (a failure guard).
func (r *coordRun) waitEvent(t *testing.T, what string, match func(run.Event) bool) timedEvent {
	t.Helper()
	guard := time.After(90 * time.Second)
	for {
		for _, ev := range r.events() {
			if match(ev.Event) {
				return ev
			}
		}
		select {
		case <-r.news:
		case <-r.done:
			for _, ev := range r.events() {
				if match(ev.Event) {
					return ev
				}
			}
			t.Fatalf("the run ended (%v) before %s:\n%s\n%s", r.cmd.ProcessState, what, r.story(), r.stderr.String())
		case <-guard:
			t.Fatalf("no %s in time:\n%s", what, r.story())
		}
	}
}

// wait waits for the run to end and returns its exit code.
func (r *coordRun) wait() int {
	<-r.done
	return r.cmd.ProcessState.ExitCode()
}

// story is the run's work.* and task events, for failures.
func (r *coordRun) story() string {
	var b strings.Builder
	for _, ev := range r.events() {
		if ev.Type == "task.output" || ev.Type == "work.renewed" {
			continue
		}
		fmt.Fprintf(&b, "%s %s task %d %s %s %s\n", ev.at.Format("15:04:05.000"), ev.Type, ev.Task, ev.WorkerName, ev.Reason, ev.Error)
	}
	return b.String()
}

// awards is the workers each task was awarded to, in order.
func (r *coordRun) awards() map[int][]string {
	got := map[int][]string{}
	for _, ev := range r.events() {
		if ev.Type == run.EventWorkAwarded {
			got[ev.Task] = append(got[ev.Task], ev.WorkerName)
		}
	}
	return got
}

// coordVerify is a verify block that checks want is in file and, on the
// coordinator alone (where marks is: a worker sees an empty directory
// there), records that the coordinator ran it and whether the project's
// plan had the task ticked at that moment.
func coordVerify(marks, planFile string, n int, want, file string) string {
	return fmt.Sprintf("grep -qx %[4]s %[5]s\n  if [ -d %[1]s ]; then echo \"%[3]d $(grep -c '^- \\[x\\] %[3]d\\.' %[2]s)\" >> %[1]s/verified; fi", marks, planFile, n, want, file)
}

// checkVerified checks that the coordinator ran the verify of each of
// tasks once, each before the task was ticked.
func checkVerified(t *testing.T, marks string, tasks ...int) {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(marks, "verified"))
	got := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		got[l]++
	}
	for _, n := range tasks {
		if got[fmt.Sprintf("%d 0", n)] != 1 {
			t.Errorf("the coordinator's verify of task %d: %v, want it run once, before the tick", n, got)
		}
	}
}

// landedOnce checks that each of tasks has exactly one commit on
// weave/<plan> and is ticked.
func landedOnce(t *testing.T, dir, plan string, tasks ...int) {
	t.Helper()
	p := planOf(t, dir, plan)
	for _, n := range tasks {
		got := gitIn(t, dir, "log", "--format=%H", "--grep", "^Weave-Task: "+strconv.Itoa(n)+"$", "main..weave/"+plan)
		if c := len(strings.Fields(got)); c != 1 {
			t.Errorf("task %d has %d commits on weave/%s, want one", n, c, plan)
		}
		if !strings.Contains(p, fmt.Sprintf("- [x] %d.", n)) {
			t.Errorf("task %d is not ticked:\n%s", n, p)
		}
	}
}

// machineAddr is an IPv4 address of this machine outside the loopback and
// the lab, or "" when it has none.
func machineAddr(l *netLab) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !strings.HasPrefix(ipn.IP.String(), l.prefix) {
			return ipn.IP.String()
		}
	}
	return ""
}

// countingListener accepts connections on addr and counts them.
func countingListener(t *testing.T, addr string) (net.Listener, *int64) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var n int64
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			_ = c.Close()
		}
	}()
	return ln, &n
}

// probeBlock tries to read secret by its absolute path and to connect to
// each address, writing what happened to probe-<i>.txt.
func probeBlock(secret string, addrs ...string) string {
	b := fmt.Sprintf("  { cat %s 2>&1 || echo read failed; } > probe-read.txt\n", secret)
	for i, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		b += fmt.Sprintf("  { timeout 5 bash -c 'echo probe > /dev/tcp/%s/%s' 2>&1 && echo reached || echo connect failed; } > probe-%d.txt\n", host, port, i)
	}
	return b
}

// TestSlowSeparateHostsPlan: a plan of four independent tasks, a probe and
// a task that waits for the four, all for the far workers, coordinated over NATS by `start-work --workers
// 2 --bus` with two `weave worker` processes each on a host of its own.
// Every task lands exactly once on weave/hosts and is ticked only after
// the coordinator's own verify block ran on the landed tree (it records
// that the task was not yet ticked then); each ran on a far host (its
// file says the worker's home); both hosts ran a task at once. The probe, on a
// worker, cannot read a file by the coordinator's absolute project path
// nor connect to this machine's loopback or its other address; the same
// probe run locally reads and reaches all three. Afterwards nothing runs
// in the hosts' namespaces and none is left.
func TestSlowSeparateHostsPlan(t *testing.T) {
	w := newHostsWorld(t, 15*time.Second)
	loop, loopHits := countingListener(t, "127.0.0.1:0")
	addrs := []string{loop.Addr().String()}
	var otherHits *int64
	if ip := machineAddr(w.lab); ip != "" {
		var other net.Listener
		other, otherHits = countingListener(t, ip+":0")
		addrs = append(addrs, other.Addr().String())
	}
	marks := filepath.Join(w.coord, "marks")
	// A task's block waits, on its host, until the test has seen a block
	// start on each host: a worker with its one slot busy takes no other
	// task, so both hosts run one at once.
	held := func(n int) string {
		return fmt.Sprintf(`touch "$HOME/started-%d"; i=0; until [ -e "$HOME/go" ]; do i=$((i+1)); [ $i -lt 2400 ] || exit 9; sleep 0.05; done`, n)
	}
	// The project and the secret: outside git, at a path only this
	// machine has.
	planText := func(dir string) string {
		planFile := filepath.Join(dir, ".weave", "plans", "hosts.md")
		p := "# Hosts\n\n## TODOs\n\n"
		for n := 1; n <= 4; n++ {
			p += fmt.Sprintf("- [ ] %d. Task %d [needs: far]\n  ```sh\n  %s\n  echo %d > f%d.txt; echo \"$HOME\" > ran%d.txt\n  ```\n  ```sh verify\n  %s\n  ```\n",
				n, n, held(n), n, n, n, coordVerify(marks, planFile, n, strconv.Itoa(n), fmt.Sprintf("f%d.txt", n)))
		}
		// Task 6 waits for the four; in a plan where a task names what it
		// waits for, the others wait for nothing and run at once.
		return p + "- [ ] 5. Probe [needs: far]\n  ```sh\n" + probeBlock(filepath.Join(dir, "secret.txt"), addrs...) + "  ```\n" +
			"- [ ] 6. Sum [needs: far] [after: 1, 2, 3, 4]\n  ```sh\n  cat f1.txt f2.txt f3.txt f4.txt > all.txt\n  ```\n  ```sh verify\n  " +
			coordVerify(marks, planFile, 6, "4", "all.txt") + "\n  test \"$(cat all.txt)\" = \"$(printf '1\\n2\\n3\\n4')\"\n  ```\n"
	}
	dir := workersRepo(t, map[string]string{"hosts": "# Hosts\n"}, map[string]string{"README": "hi\n"})
	if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", "hosts.md"), []byte(planText(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "commit", "-qam", "plan")
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("coordinator-only\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("secret.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hide := []string{dir, w.coord}
	a := w.startHost(t, "hosta", hide)
	b := w.startHost(t, "hostb", hide)

	start := time.Now()
	r := w.startCoord(t, dir, "hosts", "--workers", "2", "--bus", w.url, "--retries", "1")
	guard := time.Now().Add(90 * time.Second)
	for _, h := range []*farHost{a, b} {
		for started, _ := filepath.Glob(filepath.Join(h.home, "started-*")); len(started) == 0; started, _ = filepath.Glob(filepath.Join(h.home, "started-*")) {
			if time.Now().After(guard) {
				t.Fatalf("no block started on %s:\n%s\n%s\n%s", h.name, r.story(), r.stderr.String(), h.said())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, h := range []*farHost{a, b} {
		if err := os.WriteFile(filepath.Join(h.home, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("start-work = %d\n%s\n%s\nhosta: %s\nhostb: %s", code, r.story(), r.stderr.String(), a.said(), b.said())
	}
	wall := time.Since(start)
	landedOnce(t, dir, "hosts", 1, 2, 3, 4, 5, 6)
	checkVerified(t, marks, 1, 2, 3, 4, 6)
	homes := map[string]string{"hosta": a.home, "hostb": b.home}
	per := map[string]int{}
	for n, ws := range r.awards() {
		if len(ws) != 1 || homes[ws[0]] == "" {
			t.Errorf("task %d awarded to %v, want one far host:\n%s", n, ws, r.story())
			continue
		}
		per[ws[0]]++
		if n <= 4 {
			if got := gitIn(t, dir, "show", fmt.Sprintf("weave/hosts:ran%d.txt", n)); got != homes[ws[0]] {
				t.Errorf("task %d ran with home %q, want %s's %q", n, got, ws[0], homes[ws[0]])
			}
		}
	}
	if per["hosta"] == 0 || per["hostb"] == 0 {
		t.Errorf("awards per host %v, want work on both", per)
	}
	// On the worker the project's path is an empty directory and this
	// machine is out of reach but for the bridge.
	read := gitIn(t, dir, "show", "weave/hosts:probe-read.txt")
	if !strings.Contains(read, "No such file or directory") || strings.Contains(read, "coordinator-only") {
		t.Errorf("the probe on a worker read %s: %q", filepath.Join(dir, "secret.txt"), read)
	}
	for i, a := range addrs {
		got := gitIn(t, dir, "show", fmt.Sprintf("weave/hosts:probe-%d.txt", i))
		if !strings.Contains(got, "connect failed") {
			t.Errorf("the probe on a worker connecting to %s: %q", a, got)
		}
		t.Logf("from a worker, %s: %s", a, strings.ReplaceAll(got, "\n", " | "))
	}
	if *loopHits != 0 || (otherHits != nil && *otherHits != 0) {
		t.Errorf("this machine's listeners were reached from a worker")
	}
	// The same probe, run locally, reads the file and reaches both.
	local := workersRepo(t, map[string]string{"probe": "# Probe\n\n## TODOs\n\n- [ ] 1. Probe\n  ```sh\n" + probeBlock(filepath.Join(dir, "secret.txt"), addrs...) + "  ```\n"}, nil)
	if code, out, errOut := runWeave(t, w.bin, local, cleanEnv(t), "start-work", "probe"); code != 0 {
		t.Fatalf("the probe run locally = %d\n%s\n%s", code, out, errOut)
	}
	if got := readFile(t, filepath.Join(local, "probe-read.txt")); got != "coordinator-only\n" {
		t.Errorf("the probe run locally read %q", got)
	}
	for i := range addrs {
		if got := readFile(t, filepath.Join(local, fmt.Sprintf("probe-%d.txt", i))); got != "reached\n" {
			t.Errorf("the probe run locally, connecting to %s: %q", addrs[i], got)
		}
	}
	if *loopHits != 1 || (otherHits != nil && *otherHits != 1) {
		t.Errorf("the local probe's connections: loopback %d, other %v", *loopHits, otherHits)
	}
	t.Logf("6 tasks over 2 hosts in %s; awards per host %v", wall.Round(time.Millisecond), per)
	w.finish(t)
	for _, h := range w.hosts {
		if left := handsLeftProcesses(nil, h.root); len(left) > 0 {
			t.Errorf("processes left in host %s's directories: %v", h.name, left)
		}
	}
}

// TestSlowSeparateHostCut: the link of the host running task 1 is cut
// during its block (a partition: the worker goes on, unaware), and its
// block then finishes while it is cut. The coordinator hears no heartbeat;
// past the lease (15 s) the task is lost, offered again, awarded to the
// other host, landed once and ticked after the coordinator's verify. Then
// the link heals: the partitioned worker's late result reaches the
// coordinator and is refused. Task 3 (after task 1) holds the run in its
// verify on the coordinator until that refusal was seen; then the run
// ends with each task landed once, nothing of the partitioned worker's on
// weave/cut, nothing left running in the namespaces and no namespace
// left.
func TestSlowSeparateHostCut(t *testing.T) {
	// The lease outlasts the partitioned worker's attempt to send its
	// commit (JetStream's 5 s timeout) with room to spare, so that the
	// worker is done with the task, its result waiting to be delivered,
	// before the link heals and a heartbeat could be refused first.
	const lease = 15 * time.Second
	w := newHostsWorld(t, lease)
	marks := filepath.Join(w.coord, "marks")
	dir := workersRepo(t, map[string]string{"cut": "# Cut\n"}, map[string]string{"README": "hi\n"})
	planFile := filepath.Join(dir, ".weave", "plans", "cut.md")
	hold := `touch "$HOME/started-1"; i=0; until [ -e "$HOME/release-1" ]; do i=$((i+1)); [ $i -lt 2400 ] || exit 9; sleep 0.05; done`
	wait := fmt.Sprintf(`if [ -d %[1]s ]; then i=0; until [ -e %[1]s/go ]; do i=$((i+1)); [ $i -lt 2400 ] || exit 9; sleep 0.05; done; fi`, marks)
	plan := "# Cut\n\n## TODOs\n\n" +
		fmt.Sprintf("- [ ] 1. Held [needs: far]\n  ```sh\n  %s\n  echo one > one.txt; echo \"$HOME\" > ran1.txt\n  ```\n  ```sh verify\n  %s\n  ```\n", hold, coordVerify(marks, planFile, 1, "one", "one.txt")) +
		fmt.Sprintf("- [ ] 2. Quick [needs: far]\n  ```sh\n  echo two > two.txt\n  ```\n  ```sh verify\n  %s\n  ```\n", coordVerify(marks, planFile, 2, "two", "two.txt")) +
		fmt.Sprintf("- [ ] 3. After [needs: far] [after: 1]\n  ```sh\n  echo three > three.txt\n  ```\n  ```sh verify\n  %s\n  %s\n  ```\n", coordVerify(marks, planFile, 3, "three", "three.txt"), wait)
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "commit", "-qam", "plan")
	hide := []string{dir, w.coord}
	hosts := []*farHost{w.startHost(t, "hosta", hide), w.startHost(t, "hostb", hide)}

	r := w.startCoord(t, dir, "cut", "--workers", "2", "--bus", w.url, "--retries", "1")
	// The host whose block of task 1 started is cut off; the other's runs
	// through.
	var victim, heir *farHost
	guard := time.Now().Add(90 * time.Second)
	for victim == nil {
		for i, h := range hosts {
			if _, err := os.Stat(filepath.Join(h.home, "started-1")); err == nil {
				victim, heir = h, hosts[1-i]
			}
		}
		if time.Now().After(guard) {
			t.Fatalf("task 1 never started on a host:\n%s", r.story())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(heir.home, "release-1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	victim.net.Cut(t)
	cut := time.Now()
	// Its block finishes while it is cut off: its result waits on its side.
	if err := os.WriteFile(filepath.Join(victim.home, "release-1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	isTask1 := func(typ, worker string) func(run.Event) bool {
		return func(ev run.Event) bool {
			return ev.Type == typ && ev.Task == 1 && (worker == "" || ev.WorkerName == worker)
		}
	}
	lost := r.waitEvent(t, "task 1 lost", isTask1(run.EventWorkLost, victim.name))
	again := r.waitEvent(t, "task 1 awarded again", isTask1(run.EventWorkAwarded, heir.name))
	landed := r.waitEvent(t, "task 1 done", isTask1("task.done", ""))
	victim.net.Heal(t)
	healed := time.Now()
	refused := r.waitEvent(t, "the partitioned worker's late result refused", func(ev run.Event) bool {
		return ev.Type == "work.refused" && ev.Task == 1 && ev.WorkerName == victim.name && strings.HasPrefix(ev.Reason, "result:")
	})
	victim.proc.waitLine(t, "task cut.1: refused", func() string { return victim.said() })
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("start-work = %d\n%s\n%s\n%s: %s\n%s: %s", code, r.story(), r.stderr.String(), victim.name, victim.said(), heir.name, heir.said())
	}
	landedOnce(t, dir, "cut", 1, 2, 3)
	checkVerified(t, marks, 1, 2, 3)
	if got := gitIn(t, dir, "show", "weave/cut:ran1.txt"); got != heir.home {
		t.Errorf("task 1 on weave/cut was run with home %q, want the other host's %q", got, heir.home)
	}
	awards := r.awards()
	if len(awards[1]) != 2 || awards[1][0] != victim.name || awards[1][1] != heir.name {
		t.Errorf("task 1 awarded to %v, want %s then %s", awards[1], victim.name, heir.name)
	}
	var heartbeatsRefused int
	for _, ev := range r.events() {
		if ev.Type == "work.refused" && ev.WorkerName == victim.name && strings.HasPrefix(ev.Reason, "heartbeat:") {
			heartbeatsRefused++
		}
	}
	t.Logf("cut %s (task 1's block running there); lease %s: lost after %s (%s), awarded again to %s after %s, done after %s; "+
		"healed after %s; late result refused %s after the heal (%q); heartbeats of the lost award refused: %d; awards %v",
		victim.name, lease, lost.at.Sub(cut).Round(time.Millisecond), lost.Reason, heir.name, again.at.Sub(cut).Round(time.Millisecond),
		landed.at.Sub(cut).Round(time.Millisecond), healed.Sub(cut).Round(time.Millisecond), refused.at.Sub(healed).Round(time.Millisecond),
		refused.Reason, heartbeatsRefused, awards)
	w.finish(t)
	// The worker's processes, a run or a block, are gone with it.
	for _, h := range hosts {
		if left := handsLeftProcesses(nil, h.root); len(left) > 0 {
			t.Errorf("processes left in host %s's directories: %v", h.name, left)
		}
	}
}
