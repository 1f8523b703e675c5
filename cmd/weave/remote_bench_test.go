package main

// The benchmark of a run with remote workers (issue "Hands on other
// machines", Performance): `start-work --workers 8 --bus nats://...` on
// independent `sleep 1` tasks, run by two `weave worker` processes beside
// an embedded nats-server, against the same floor as the local workers'.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/host/run"
)

// remoteProcs is how many `weave worker` processes the benchmark starts.
const remoteProcs = 2

// remoteShape is the number of tasks and of slots per worker process:
// WEAVE_BENCH_REMOTE ("64x4", as scripts/bench.sh sets it), else 8 tasks
// on 4 slots each.
func remoteShape(b *testing.B) (tasks, slots int) {
	b.Helper()
	return handsShape(b, "WEAVE_BENCH_REMOTE", 8, 4)
}

// remoteSleepPlan is handsSleepPlan whose tasks need the label the worker
// processes offer and the coordinator's own workers do not: every task
// travels over the bus.
func remoteSleepPlan(n int) []byte {
	return []byte(regexp.MustCompile(`(?m)^(- \[ \] \d+\. Sleep \d+)$`).ReplaceAllString(string(handsSleepPlan(n)), "$1 [needs: far]"))
}

// remoteStep matches the line a task's log gets from the pool once its
// commit is back (host/remote).
var remoteStep = regexp.MustCompile(`ran on worker \S+ \(award \S+\): bundle out ([0-9.]+) ms, offer to award ([0-9.]+) ms, base in ([0-9.]+) ms, run ([0-9.]+) ms, bundle back ([0-9.]+) ms, fetch ([0-9.]+) ms`)

// BenchmarkStartWorkRemote runs `weave start-work --workers W --bus URL
// --infer-deps --json` on a plan of T independent `sleep 1` tasks that
// only two `weave worker` processes of S slots each can take (W = 2S),
// beside an embedded nats-server, and reports the wall time of the run
// (s/run) and, per task, the median of each step the coordinator pays:
// the call for proposals to the award (with, within it, the wait for the
// base bundle to be stored), the result bundle fetched and checked, and
// the landing (the commit back to its tick, verify and all, with the
// wait behind other landings); coord-ms/task is their sum. The landing
// alone, from its start to its commit on the branch, is landing-ms/task.
// The worker's own run
// (worktree, the task run in the worker's host, commit, result bundle) is
// reported too (worker-ms/task, without the sleep's second), and the CPU
// time of the whole run, coordinator and workers with their children, per
// task (cpu-ms/task), the workers' share of it (worker-cpu-ms/task) and the
// coordinator's, its git and plugin processes with it (coord-cpu-ms/task):
// on a machine of C cores, T tasks need T*cpu/C of it
// whatever the scheduling, which bounds the wall from below too.
//
// create-us is what creating a file cost beside the run's directory just
// before it (fileCreateCost), and create-after-us just after it: much of
// the coordinator's work per task is files made, and where the inode
// allocator is slow (ext4 without a journal skips, one by one, the inodes
// freed in the last minutes each time it allocates one) they dominate the
// figures. Set TMPDIR to run the benchmark on another file system.
func BenchmarkStartWorkRemote(b *testing.B) {
	bin := weaveBinary(b)
	tasks, slots := remoteShape(b)
	workers := remoteProcs * slots
	var total, cpu, workerCPU time.Duration
	var steps [7][]float64 // bundle out, award, fetch, land, worker, base in, landing alone
	var creates, createsAfter []float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		creates = append(creates, fileCreateCost(b, b.TempDir()))
		handsRepoInit(b, dir, 0)
		handsWritePlan(b, dir, "sleep", remoteSleepPlan(tasks))
		env := benchEnv(b, bin, dir)
		ns := bustest.StartNATS(b)
		var procs []*exec.Cmd
		for p := 1; p <= remoteProcs; p++ {
			procs = append(procs, remoteWorker(b, bin, env, ns.URL(), fmt.Sprintf("far%d", p), slots))
		}
		before := procCPU(b, procs)
		b.StartTimer()
		start := time.Now()
		cmd := exec.Command(bin, "--dir", dir, "start-work", "--workers", strconv.Itoa(workers), "--bus", ns.URL(), "--infer-deps", "--json", "sleep")
		cmd.Env = env
		out, err := cmd.Output()
		total += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatalf("start-work --workers %d --bus: %v\n%s", workers, err, tail(out))
		}
		w := procCPU(b, procs) - before
		cpu += cpuTime(cmd) + w
		workerCPU += w
		createsAfter = append(createsAfter, fileCreateCost(b, b.TempDir()))
		handsCheckLanded(b, dir, "sleep", tasks)
		remoteSteps(b, out, tasks, &steps)
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/run")
	names := []string{"bundle-out-ms/task", "award-ms/task", "fetch-ms/task", "land-ms/task", "worker-ms/task", "base-in-ms/task", "landing-ms/task"}
	coord := 0.0
	for k, name := range names {
		m := median(steps[k])
		b.ReportMetric(m, name)
		if k >= 1 && k < 4 { // the bundle out is within the award
			coord += m
		}
	}
	b.ReportMetric(coord, "coord-ms/task")
	b.ReportMetric(median(creates), "create-us")
	b.ReportMetric(median(createsAfter), "create-after-us")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N*tasks), "cpu-ms/task")
	b.ReportMetric(float64(workerCPU.Microseconds())/1000/float64(b.N*tasks), "worker-cpu-ms/task")
	b.ReportMetric(float64((cpu-workerCPU).Microseconds())/1000/float64(b.N*tasks), "coord-cpu-ms/task")
}

// fileCreateCost is the median time, in microseconds, of creating an empty
// file in a new directory of dir, over 64 files, which are left in place:
// removing them would make the allocator slower for the run after.
func fileCreateCost(b *testing.B, dir string) float64 {
	b.Helper()
	probe := filepath.Join(dir, ".create-probe")
	if err := os.Mkdir(probe, 0o755); err != nil {
		b.Fatal(err)
	}
	var cost []float64
	for i := range 64 {
		start := time.Now()
		f, err := os.Create(filepath.Join(probe, strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		cost = append(cost, float64(time.Since(start).Nanoseconds())/1000)
		_ = f.Close()
	}
	return median(cost)
}

// procCPU is the CPU time the worker processes and the children they
// waited for have used so far (from /proc: utime, stime, cutime, cstime).
func procCPU(b *testing.B, procs []*exec.Cmd) time.Duration {
	b.Helper()
	var ticks int64
	for _, p := range procs {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
		if err != nil {
			b.Fatalf("CPU time of worker %d: %v", p.Process.Pid, err)
		}
		// Fields after the command name, which ends with the last ')':
		// state is the first, utime the 12th.
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		for _, i := range []int{11, 12, 13, 14} {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

// remoteWorker starts `weave worker` with slots slots and the label far,
// and waits until it has joined; it is killed when the benchmark ends.
func remoteWorker(b *testing.B, bin string, env []string, url, name string, slots int) *exec.Cmd {
	b.Helper()
	cmd := exec.Command(bin, "worker", "--bus", url, "--name", name, "--slots", strconv.Itoa(slots), "--labels", "far", "--repo", filepath.Join(b.TempDir(), name))
	cmd.Env = append(env, "WEAVE_SANDBOX_MODE=off")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	joined := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "joined") {
				said = true
				joined <- true
			}
		}
		if !said {
			joined <- false
		}
	}()
	select {
	case ok := <-joined:
		if !ok {
			b.Fatalf("worker %s ended before it joined", name)
		}
	case <-time.After(time.Minute):
		b.Fatalf("worker %s did not join", name)
	}
	return cmd
}

// remoteSteps adds each task's steps, read from the run's --json events,
// to steps: the pool's line in the task's output and, for the landing,
// the time from that line to the task's tick (task.done), and for the
// landing alone, from task.landing to task.landed.
func remoteSteps(b *testing.B, out []byte, tasks int, steps *[7][]float64) {
	b.Helper()
	back, landing := map[int]time.Time{}, map[int]time.Time{}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var ev run.Event
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == run.EventTaskOutput && remoteStep.MatchString(ev.Output):
			m := remoteStep.FindStringSubmatch(ev.Output)
			v := make([]float64, len(m))
			for i := 1; i < len(m); i++ {
				v[i], _ = strconv.ParseFloat(m[i], 64)
			}
			// bundle out, award, fetch; the worker's run less the sleep,
			// with its bundle back; its base in.
			steps[0] = append(steps[0], v[1])
			steps[1] = append(steps[1], v[2])
			steps[2] = append(steps[2], v[6])
			steps[4] = append(steps[4], v[4]-1000+v[5])
			steps[5] = append(steps[5], v[3])
			back[ev.Task] = ev.Time
			seen++
		case ev.Type == run.EventTaskLanding:
			landing[ev.Task] = ev.Time
		case ev.Type == run.EventTaskLanded:
			if at, ok := landing[ev.Task]; ok {
				steps[6] = append(steps[6], float64(ev.Time.Sub(at).Microseconds())/1000)
			}
		case ev.Type == run.EventTaskDone:
			if at, ok := back[ev.Task]; ok {
				steps[3] = append(steps[3], float64(ev.Time.Sub(at).Microseconds())/1000)
			}
		}
	}
	if seen != tasks {
		b.Fatalf("%d of %d tasks said how their steps went", seen, tasks)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkRemoteFloor is BenchmarkWorkersFloor at the shape of
// BenchmarkStartWorkRemote: the ideal of T `sleep 1` tasks on 2S slots,
// plus one git commit and one fsynced tick per task, landed one at a time.
func BenchmarkRemoteFloor(b *testing.B) {
	tasks, slots := remoteShape(b)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		handsRepoInit(b, dir, 0)
		handsWritePlan(b, dir, "sleep", remoteSleepPlan(tasks))
		b.StartTimer()
		start := time.Now()
		if err := handsFloorPool(dir, filepath.Join(dir, ".weave", "plans", "sleep.md"), tasks, remoteProcs*slots); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/run")
}
