package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
)

// lostCoordinatorPlan has three tasks, each for one `weave worker` by its
// label. Task 1's block, on its first attempt, waits for ever (the
// coordinator is killed during it); task 2's verify block, on the
// coordinator's landed tree only, waits for ever the first time (the
// coordinator is killed during its landing); task 3's block, on its first
// attempt, waits for the file go3 (it finishes while no coordinator is
// there, and its result reaches the next one). Task 4 waits for the three.
func lostCoordinatorPlan(shared string) string {
	firstWait := func(mark, release string) string {
		// The pid is moved into place whole: the test reads it as soon as
		// the file is there.
		return "if mkdir " + shared + "/" + mark + " 2>/dev/null; then echo $$ > " + shared + "/" + mark + "/pid.tmp; mv " + shared + "/" + mark + "/pid.tmp " + shared + "/" + mark + "/pid; " +
			"while [ ! -f " + shared + "/" + release + " ]; do sleep 0.05; done; fi"
	}
	return "# Lost\n\n## TODOs\n\n" +
		"- [ ] 1. Block [needs: one]\n  ```sh\n  " + firstWait("block1", "never") + "\n  echo one > one.txt\n  ```\n  ```sh verify\n  grep -qx one one.txt\n  ```\n" +
		"- [ ] 2. Land [needs: two]\n  ```sh\n  echo two > two.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in */land) " + firstWait("land2", "never") + ";; esac\n  grep -qx two two.txt\n  ```\n" +
		"- [ ] 3. Late [needs: three]\n  ```sh\n  " + firstWait("block3", "go3") + "\n  echo three > three.txt\n  ```\n  ```sh verify\n  grep -qx three three.txt\n  ```\n" +
		"- [ ] 4. Sum [after: 1, 2, 3]\n  ```sh\n  cat one.txt two.txt three.txt > all.txt\n  ```\n  ```sh verify\n  test \"$(cat all.txt)\" = \"$(printf 'one\\ntwo\\nthree')\"\n  ```\n"
}

// TestRemoteCoordinatorKilled: `start-work --workers 3 --bus nats://` is
// killed with SIGKILL while one `weave worker` runs task 1's block, while
// the coordinator itself runs task 2's verify blocks on the landed tree,
// and while task 3 runs on a third worker, which finishes it with nobody
// to take the result. `start-work` again resumes from state.json and
// JetStream: the awards of the dead coordinator are taken back, so the
// worker of task 1 (one slot) stops that block and is free to run the
// task again, task 3's late result is refused and the task runs again,
// task 2 lands from the commit the dead coordinator had; every task is
// ticked with one commit on weave/lost and nothing of the first run is
// left running.
func TestRemoteCoordinatorKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	w1 := startWorker(t, url, "w1", "--labels", "one", "--slots", "1")
	startWorker(t, url, "w2", "--labels", "two")
	w3 := startWorker(t, url, "w3", "--labels", "three")
	shared := t.TempDir()
	dir := workersRepo(t, map[string]string{"lost": lostCoordinatorPlan(shared)}, nil)
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("run:\n  lease: 3s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "lease")
	env := cleanEnv(t)

	cmd := exec.Command(bin, "start-work", "lost", "--workers", "3", "--bus", url, "--json")
	cmd.Dir, cmd.Env = dir, trustingEnv(t, env)
	var first strings.Builder
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for _, f := range []string{"block1/pid", "land2/pid", "block3/pid"} {
		if !waitPath(filepath.Join(shared, f)) {
			t.Fatalf("%s never appeared; the run said:\n%s", f, first.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// Task 3 finishes now, with no coordinator to take its result.
	if err := os.WriteFile(filepath.Join(shared, "go3"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The coordinator's own verify block died with it.
	if pid := pidIn(t, filepath.Join(shared, "land2", "pid")); !waitGone(pid) {
		t.Errorf("the killed coordinator's verify block (pid %d) still runs", pid)
	}

	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "lost", "--workers", "3", "--bus", url, "--json")
	if code != 0 {
		t.Fatalf("start-work again = %d\nstdout: %s\nstderr: %s\nworker w1: %s\nfirst run: %s", code, out, errOut, strings.Join(w1.all, "\n"), first.String())
	}
	if p := planOf(t, dir, "lost"); strings.Count(p, "- [x]") != 4 {
		t.Errorf("plan after the second run:\n%s\nwant 4 ticks", p)
	}
	repo := gitIn(t, dir, "rev-parse", "--show-toplevel")
	for n, file := range map[int]string{1: "one", 2: "two", 3: "three", 4: "all"} {
		got := gitIn(t, repo, "log", "--format=%H", "--grep", "Weave-Task: "+strconv.Itoa(n), "main..weave/lost")
		if len(strings.Fields(got)) != 1 {
			t.Errorf("task %d has commits %q on weave/lost, want one", n, got)
		}
		if s := gitIn(t, dir, "show", "weave/lost:"+file+".txt"); n < 4 && s != file {
			t.Errorf("%s.txt on weave/lost = %q", file, s)
		}
	}
	// Task 1's first block was stopped (its worker's heartbeat refused),
	// not left to run for ever in the worker's only slot.
	if pid := pidIn(t, filepath.Join(shared, "block1", "pid")); !waitGone(pid) {
		t.Errorf("the first block of task 1 (pid %d) still runs", pid)
	}
	w1.waitLine(t, "task lost.1: stopped", func() string { return strings.Join(w1.all, "\n") })
	w3.waitLine(t, "task lost.3: refused", func() string { return strings.Join(w3.all, "\n") })
	lost := map[int]string{}
	for _, ev := range events(t, out) {
		if ev.Type == "work.lost" {
			lost[ev.Task] = ev.Reason
		}
	}
	if !strings.Contains(lost[1], "coordinator that stopped") || !strings.Contains(lost[3], "coordinator that stopped") {
		t.Errorf("work.lost of the second run: %v, want tasks 1 and 3 taken back", lost)
	}
}

// waitPath waits for path to exist, for a minute at most (a failure
// guard).
func waitPath(path string) bool {
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pidIn reads the process id a block wrote to path.
func pidIn(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}
