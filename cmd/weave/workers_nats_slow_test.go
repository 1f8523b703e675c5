//go:build slow && linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
)

// farEvent is the part of a --json event the trials over NATS read.
type farEvent struct {
	Type       string `json:"type"`
	Task       int    `json:"task"`
	Output     string `json:"output"`
	WorkerName string `json:"worker_name"`
	Reason     string `json:"reason"`
}

// farFault is a trial's fault: what is hit (the coordinator or a worker
// killed with SIGKILL, or nats-server restarted) and when, by the run's
// own events: after the n-th event of any kind, the n-th task.landing,
// the n-th block of a local worker saying "begin", or the n-th award
// (work.awarded), and a pause.
type farFault struct {
	target string // "coordinator", "worker" or "nats"
	at     handsKill
}

func (f farFault) String() string { return f.target + " at " + f.at.String() }

// farPlan is handsCrashPlan with tasks 1 to 6 for the `weave worker`
// processes alone ([needs: far]: the run's local workers lack the label);
// tasks 7 to 9 go to whichever worker bids best.
var farPlan = func() string {
	p := handsCrashPlan
	for _, title := range []string{"1. Write alpha", "2. Write beta", "3. Edit line 5 of the shared file", "4. Edit line 25 of the shared file", "5. Append to the log", "6. Append to the log too"} {
		p = strings.Replace(p, title+"\n", title+" [needs: far]\n", 1)
	}
	return p
}()

func farPickFault(rng *rand.Rand) farFault {
	award := handsKill{"award", rng.IntN(handsCrashTasks), time.Duration(rng.Int64N(int64(400 * time.Millisecond)))}
	switch rng.IntN(3) {
	case 0:
		switch rng.IntN(3) {
		case 0:
			return farFault{"coordinator", award}
		case 1:
			return farFault{"coordinator", handsKill{"landing", rng.IntN(handsCrashTasks), time.Duration(rng.Int64N(int64(40 * time.Millisecond)))}}
		default:
			return farFault{"coordinator", handsKill{"event", rng.IntN(60), time.Duration(rng.Int64N(int64(5 * time.Millisecond)))}}
		}
	case 1:
		return farFault{"worker", award}
	default:
		if rng.IntN(2) == 0 {
			return farFault{"nats", award}
		}
		return farFault{"nats", handsKill{"event", rng.IntN(60), 0}}
	}
}

// farStart runs `weave start-work --workers 3 --bus URL --json crash` in
// dir; when the fault's moment comes, act is called with the event that
// triggered it and the coordinator is killed with SIGKILL when act says
// so.
func farStart(t *testing.T, bin, dir, xdg, url string, f *farFault, act func(farEvent) bool) handsRun {
	t.Helper()
	cmd := exec.Command(bin, "--dir", dir, "start-work", "--workers", "3", "--retries", "3", "--bus", url, "--json", "crash")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WEAVE_") {
			env = append(env, kv)
		}
	}
	cmd.Env = trustingEnv(t, append(env, "XDG_CONFIG_HOME="+xdg))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := handsRun{pid: cmd.Process.Pid, conflicts: map[int]bool{}, story: map[int][]string{}}
	guard := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	defer guard.Stop()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	counts := map[string]int{}
	fired := false
	for sc.Scan() {
		var ev farEvent
		_ = json.Unmarshal(sc.Bytes(), &ev)
		if ev.Type == "task.conflict" {
			r.conflicts[ev.Task] = true
		}
		if ev.Task > 0 && ev.Type != "task.output" && ev.Type != "work.renewed" {
			step := strings.TrimPrefix(ev.Type, "task.") + "@" + ev.WorkerName
			if ev.Reason != "" && (ev.Type == "work.refused" || ev.Type == "work.lost") {
				step += "(" + ev.Reason + ")"
			}
			r.story[ev.Task] = append(r.story[ev.Task], step)
		}
		if f == nil || fired {
			continue
		}
		hit := false
		k := f.at
		switch {
		case k.what == "event":
			hit = counts["event"] == k.n
			counts["event"]++
		case k.what == "landing" && ev.Type == "task.landing":
			hit = counts["landing"] == k.n
			counts["landing"]++
		case k.what == "block" && ev.Type == "task.output" && strings.HasPrefix(ev.Output, "begin "):
			hit = counts["block"] == k.n
			counts["block"]++
		case k.what == "award" && ev.Type == "work.awarded":
			hit = counts["award"] == k.n
			counts["award"]++
		}
		if hit {
			fired = true
			time.Sleep(k.pause)
			if act(ev) {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				r.killed = true
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	r.err = cmd.Wait()
	r.stderr = stderr.String()
	if r.killed && r.err == nil {
		r.killed = false
	}
	return r
}

// farWorker is one `weave worker` of a trial: its name and repository,
// kept across its restarts as a machine's would be.
type farWorker struct {
	name, repo string
	proc       *workerProc
	dead       []int
}

// TestSlowRemoteWorkersFaults runs seeded trials of farPlan (tasks that
// run at once, tasks that wait, two that conflict; six of them for the
// `weave worker` processes alone) coordinated over
// an embedded nats-server with JetStream: `start-work --workers 3 --bus`
// (its local workers bid too) and two `weave worker` processes of two
// slots each. At a moment chosen from the run's own events one fault
// happens: the coordinator is killed with SIGKILL (then started again),
// a worker is killed with SIGKILL (then started again under its name,
// while the run goes on), or nats-server restarts. After each run the
// invariants of handsCheck hold: every task landed at most once, no tick
// without its verify passing on weave/crash; after the last, every task
// is ticked with one commit, and nothing of the trial is left running (no
// block or run under the project or a worker's repository, no process of
// a killed coordinator, no plugin). WEAVE_FAR_SEED=<seed> replays one
// trial; WEAVE_FAR_TRIALS sets how many run (default 10).
func TestSlowRemoteWorkersFaults(t *testing.T) {
	bin := buildWeave(t)
	trials := 10
	if env := os.Getenv("WEAVE_FAR_TRIALS"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n <= 0 {
			t.Fatalf("WEAVE_FAR_TRIALS=%q: want a number of trials", env)
		}
		trials = n
	}
	seeds := make([]uint64, trials)
	for i := range seeds {
		seeds[i] = 20261126 + uint64(i)
	}
	if env := os.Getenv("WEAVE_FAR_SEED"); env != "" {
		s, err := strconv.ParseUint(env, 10, 64)
		if err != nil {
			t.Fatalf("WEAVE_FAR_SEED=%q: want a seed", env)
		}
		seeds = []uint64{s}
	}
	hits := map[string]int{}
	remote := 0
	for _, seed := range seeds {
		target, far := farTrial(t, bin, seed)
		if target != "" {
			hits[target]++
		}
		remote += far
		if t.Failed() {
			return
		}
	}
	t.Logf("%d trials: faults that happened mid-run %v; %d awards went to the `weave worker` processes", len(seeds), hits, remote)
	if len(seeds) > 1 && remote == 0 {
		t.Error("no task was ever awarded to a `weave worker` process")
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := pluginsOf(bin); len(left) > 0; left = pluginsOf(bin) {
		if time.Now().After(deadline) {
			t.Fatalf("plugins left running after the trials: pids %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// farTrial is one seeded trial; it returns the target of the fault when
// it happened before the run ended, and how many awards went to the
// `weave worker` processes.
func farTrial(t *testing.T, bin string, seed uint64) (string, int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 26))
	fault := farPickFault(rng)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("trial seed %d, %v (replay: WEAVE_FAR_SEED=%d go test -tags slow ./cmd/weave/ -run TestSlowRemoteWorkersFaults): %s", seed, fault, seed, fmt.Sprintf(format, args...))
	}
	ns := bustest.StartNATS(t)
	url := ns.URL()
	dir, xdg := t.TempDir(), t.TempDir()
	start := handsCrashRepo(t, dir)
	if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", "crash.md"), []byte(farPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	// A short lease, so that a lost worker's task is offered again soon.
	if err := os.MkdirAll(filepath.Join(xdg, "weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "weave", "config.yaml"), []byte("run:\n  lease: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := []*farWorker{{name: "far1", repo: filepath.Join(t.TempDir(), "far1")}, {name: "far2", repo: filepath.Join(t.TempDir(), "far2")}}
	for _, w := range ws {
		w.proc = startWorker(t, url, w.name, "--repo", w.repo, "--slots", "2", "--labels", "far")
	}
	var deadCoords []int
	happened := ""
	story := map[int][]string{}
	act := func(ev farEvent) bool {
		happened = fault.target
		switch fault.target {
		case "coordinator":
			return true
		case "worker":
			victim := ws[rng.IntN(len(ws))]
			for _, w := range ws {
				if w.name == ev.WorkerName {
					victim = w
				}
			}
			victim.dead = append(victim.dead, victim.proc.cmd.Process.Pid)
			_ = victim.proc.cmd.Process.Kill()
			_ = victim.proc.cmd.Wait()
			victim.proc = startWorker(t, url, victim.name, "--repo", victim.repo, "--slots", "2", "--labels", "far")
		case "nats":
			ns.Stop()
			ns.Start()
		}
		return false
	}
	for i := 0; ; i++ {
		f := &fault
		if i > 0 {
			f = nil
		}
		r := farStart(t, bin, dir, xdg, url, f, act)
		for n, evs := range r.story {
			story[n] = append(story[n], fmt.Sprintf("run %d: %s", i, strings.Join(evs, " ")))
		}
		if r.killed {
			deadCoords = append(deadCoords, r.pid)
		} else if r.err != nil {
			fail("run %d failed on its own: %v\n%s\nstories: %v", i, r.err, r.stderr, story)
			return happened, 0
		}
		final := !r.killed
		for _, msg := range handsCheckPlan(t, dir, start, final, farPlan) {
			fail("after run %d: %s (stories: %v)", i, msg, story)
		}
		if final || i > 2 {
			break
		}
	}
	if msg := handsCheckWorktrees(t, dir); msg != "" {
		fail("%s", msg)
	}
	if left := handsLeftProcesses(deadCoords, dir); len(left) > 0 {
		sort.Strings(left)
		fail("processes of the coordinator left running: %s", strings.Join(left, "; "))
	}
	// The workers are idle once the plan is done: nothing runs in their
	// repositories, a killed one's run and blocks included.
	for _, w := range ws {
		if left := handsLeftProcesses(w.dead, w.repo); len(left) > 0 {
			sort.Strings(left)
			fail("processes left running in worker %s's repository: %s", w.name, strings.Join(left, "; "))
		}
		_ = w.proc.cmd.Process.Signal(os.Interrupt)
		_ = w.proc.cmd.Wait()
	}
	ns.Stop()
	far := 0
	for _, lines := range story {
		for _, l := range lines {
			far += strings.Count(l, "work.awarded@far")
		}
	}
	return happened, far
}
