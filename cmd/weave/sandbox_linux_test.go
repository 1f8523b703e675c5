package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/internal/sandbox"
)

// needSandbox skips a test on a machine that cannot build the sandbox
// (the kernel or its policy refuses user namespaces); what such a machine
// does is host/tools' strict and auto tests.
func needSandbox(t *testing.T, bin string) {
	t.Helper()
	if err := sandbox.Probe(t.Context(), bin); err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
}

// bashTurn is a model turn that makes one bash call.
func bashTurn(command string) modeltest.Turn {
	return modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "bash", Args: fmt.Sprintf(`{"command":%q}`, command)}}}
}

// A read-only role's bash writes nothing in the project: the sandbox
// refuses it, and the model reads why.
func TestSandboxReadOnlyRole(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	needSandbox(t, bin)
	dir := project(t, nil)
	tmpFile := fmt.Sprintf("/tmp/weave-thread-%d.txt", os.Getpid())
	t.Cleanup(func() { os.Remove(tmpFile) })
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "task", Args: `{"agent":"thread","prompt":"write x.txt"}`}}},
		bashTurn("echo x > x.txt; echo y > "+tmpFile+" && echo tmp written"),
		modeltest.Turn{Text: "I could not write."},
		modeltest.Turn{Text: "Thread could not write."},
	)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "write x.txt")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
		t.Error("thread's bash wrote x.txt")
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	got := requestToolResults(t, reqs[2])
	note := "read-only sandbox: thread has no write or edit, so the project and the whole file system are read-only in its bash (only a private /tmp is writable)"
	if len(got) != 1 || !strings.HasSuffix(got[0], note+"\n") || !strings.Contains(got[0], "Read-only file system") {
		t.Errorf("thread's model reads %q, want the failed write ending with %q", got, note)
	}
	if len(got) == 1 && !strings.Contains(got[0], "tmp written") {
		t.Errorf("thread's model reads %q: its private /tmp should be writable", got)
	}
	if _, err := os.Stat(tmpFile); err == nil {
		t.Error("the sandbox's /tmp is the host's")
	}
}

// A writing role's bash writes the project, but not its host-owned files,
// nor the rest of the file system; it cannot remount, has no capability
// and sees no host process.
func TestSandboxHostOwnedAndView(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	needSandbox(t, bin)
	dir := project(t, nil)
	cfg := "tools:\n  bash:\n    timeout: 1m\n"
	writeConfig(t, dir, cfg)
	state := `{"plans":{}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "state.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	script := fmt.Sprintf(`echo made > made.txt
echo plan > .weave/plans/new.md
echo 'sandbox: {mode: off}' >> .weave/config.yaml || echo config refused
sed -i 's/plans/pwned/' .weave/state.json || echo state refused
echo out > %s/out.txt || echo outside refused
mount -o remount,rw / || echo remount refused
grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status
echo "pids: $(ls /proc | grep -E '^[0-9]+$' | tr '\n' ' ')"`, outside)
	srv := modeltest.NewServer(t, bashTurn(script), modeltest.Turn{Text: "Done."})
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "try")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("loom's bash did not write the project: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".weave", "plans", "new.md")); err != nil {
		t.Errorf("loom's bash did not write a plan: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".weave", "config.yaml")); string(b) != cfg {
		t.Errorf(".weave/config.yaml = %q, want it unchanged", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".weave", "state.json")); string(b) != state {
		t.Errorf(".weave/state.json = %q, want it unchanged", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Error("loom's bash wrote outside the project")
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	got := strings.Join(requestToolResults(t, reqs[1]), "\n")
	for _, want := range []string{"config refused", "state refused", "outside refused", "remount refused",
		"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
		"\nread-only sandbox: bash may write only the project and a private /tmp; the project's host-owned files (.weave/ but .weave/plans/, .claude/, .mcp.json, hook scripts) and the rest of the file system are read-only\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the model reads %q, want %q in it", got, want)
		}
	}
	_, pids, _ := strings.Cut(got, "pids: ")
	pids, _, _ = strings.Cut(pids, "\n")
	for _, f := range strings.Fields(pids) {
		if n, _ := strconv.Atoi(f); n > 50 {
			t.Errorf("bash sees pid %s: a host process (pids: %s)", f, pids)
		}
	}
}

// No network unless the config allows it: a connect to a listener on the
// host's loopback fails with sandbox.network deny, and works with allow.
func TestSandboxNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	needSandbox(t, bin)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`if exec 3<>/dev/tcp/127.0.0.1/%d; then echo "connected: $(head -1 <&3)"; else echo "connect refused"; fi`, port)
	for _, tc := range []struct{ network, want, wrong string }{
		{"deny", "connect refused", "hello from the host"},
		{"allow", "connected: hello from the host", "connect refused"},
	} {
		t.Run(tc.network, func(t *testing.T) {
			dir := project(t, nil)
			writeConfig(t, dir, "sandbox:\n  network: "+tc.network+"\n")
			srv := modeltest.NewServer(t, bashTurn(script), modeltest.Turn{Text: "Done."})
			code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "connect")
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			got := strings.Join(requestToolResults(t, reqs[1]), "\n")
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.wrong) {
				t.Errorf("with sandbox.network %s the model reads %q, want %q", tc.network, got, tc.want)
			}
		})
	}
}

// markedProcesses lists the running processes whose command line holds
// mark.
func markedProcesses(mark string) []int {
	des, _ := os.ReadDir("/proc")
	var out []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + de.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(mark)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + de.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// A weave killed outright during a bash call leaves nothing of it
// running, a setsid child included: the kernel ends the sandbox's PID
// namespace with its init.
func TestSandboxSIGKILLLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	needSandbox(t, bin)
	dir := project(t, nil)
	mark := fmt.Sprintf("30.%d", 1000+os.Getpid()%9000)
	srv := modeltest.NewServer(t, bashTurn(fmt.Sprintf("sleep %s & setsid sleep %s & wait", mark, mark)), modeltest.Turn{Text: "Done."})
	cmd := exec.Command(bin, "chat", "-p", "sleep")
	cmd.Dir, cmd.Env = dir, chatEnv(t, srv)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(time.Minute) // a failure guard only
	for len(markedProcesses(mark)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the two sleeps never started (have %v)", markedProcesses(mark))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	for {
		left := markedProcesses(mark)
		if len(left) == 0 {
			break
		}
		if time.Since(killed) > time.Second {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v of the bash call still run a second after weave was killed", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sandboxProcScript is the hostile model's bash call in the sandbox: it
// reads its parent's environment, the one of weave's pid (which it learns
// from the project), and every environment it can see.
const sandboxProcScript = `n=0; while [ ! -s hostpid.txt ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done
hp=$(cat hostpid.txt); echo "weave is pid $hp"
tr '\0' '\n' < /proc/$hp/environ || echo "no pid $hp here"
tr '\0' '\n' < /proc/$PPID/environ || echo "parent's environ refused"
for f in /proc/[0-9]*/environ; do tr '\0' '\n' < $f; done
echo end of reads`

// No planted secret is readable through /proc from a sandboxed bash call,
// whoever runs weave (root too: the sandbox shows no host process, and its
// init has no environment and is not dumpable).
func TestSandboxNoSecretThroughProc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	needSandbox(t, bin)
	users := []struct {
		name string
		cred func(*testing.T) *syscall.Credential
	}{{"current user", func(*testing.T) *syscall.Credential { return nil }}}
	if os.Geteuid() == 0 {
		users = append(users, struct {
			name string
			cred func(*testing.T) *syscall.Credential
		}{"unprivileged user", unprivileged})
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			cred := u.cred(t)
			base, err := os.MkdirTemp("", "weave-sbproc")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			exe := filepath.Join(base, "weave")
			copyFile(t, bin, exe, 0o755)
			dir := filepath.Join(base, "project")
			if err := os.MkdirAll(filepath.Join(dir, ".weave", "plans"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{"home", "xdg"} {
				if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if cred != nil {
				if err := os.Chmod(base, 0o755); err != nil {
					t.Fatal(err)
				}
				_ = filepath.WalkDir(base, func(p string, _ fs.DirEntry, err error) error {
					if err == nil {
						err = os.Lchown(p, int(cred.Uid), int(cred.Gid))
					}
					return err
				})
			}
			srv := modeltest.NewServer(t, bashTurn(sandboxProcScript), modeltest.Turn{Text: "Done."})
			env := []string{
				"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(base, "home"), "XDG_CONFIG_HOME=" + filepath.Join(base, "xdg"),
				"WEAVE_MODEL_PROVIDER=openai", "WEAVE_MODEL_NAME=fake-model", "WEAVE_MODEL_BASE_URL=" + srv.OpenAIURL(),
				"WEAVE_MODEL_API_KEY_ENV=WEAVE_TEST_MODEL_KEY",
			}
			for k, v := range plantedSecrets {
				env = append(env, k+"="+v)
			}
			cmd := exec.Command(exe, "--dir", dir, "chat", "-p", "read the environment")
			cmd.Env = env
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pidFile := filepath.Join(dir, "hostpid.txt")
			if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("weave chat: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2\nstderr: %s", len(reqs), errOut.String())
			}
			result := strings.Join(requestToolResults(t, reqs[1]), "\n")
			if !strings.Contains(result, fmt.Sprintf("weave is pid %d", cmd.Process.Pid)) || !strings.Contains(result, "end of reads") {
				t.Errorf("the bash call's result = %q, want weave's pid read and every read made", result)
			}
			places := map[string]string{"the bash call's result": result, "weave's output": out.String() + errOut.String()}
			for i, r := range reqs {
				places[fmt.Sprintf("model request %d", i+1)] = string(r.Body)
			}
			_ = filepath.WalkDir(filepath.Join(dir, ".weave"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					places[p] = readAll(t, p)
				}
				return nil
			})
			for where, text := range places {
				for k, v := range plantedSecrets {
					if strings.Contains(text, v) {
						t.Errorf("%s holds the planted %s", where, k)
					}
				}
			}
		})
	}
}

// weave doctor says which sandbox mode is in force and whether bash can be
// sandboxed here.
func TestDoctorSaysTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	needSandbox(t, weaveBin(t))
	for _, tc := range []struct{ yaml, want string }{
		{"", "ok   sandbox  auto (sandbox.mode): bash runs in a sandbox here, network deny"},
		{"sandbox:\n  mode: strict\n  network: allow\n", "ok   sandbox  strict (sandbox.mode): bash runs in a sandbox here, network allow"},
		{"sandbox:\n  mode: off\n", "ok   sandbox  off (sandbox.mode): bash runs without a sandbox"},
	} {
		dir := project(t, nil)
		writeConfig(t, dir, tc.yaml)
		r := runBin(t, nil, "", "--dir", dir, "doctor")
		if !strings.Contains(r.out, tc.want+"\n") {
			t.Errorf("doctor with %q lacks %q:\n%s", tc.yaml, tc.want, r.out)
		}
	}
}

// Tapestry carrying out a plan task writes the project from bash, but not
// the rules of the run: config and state stay as they were.
func TestSandboxTapestryHostOwned(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	needSandbox(t, bin)
	dir := project(t, map[string]string{"greeting": prosePlan})
	cfg := "tools:\n  bash:\n    timeout: 1m\n"
	writeConfig(t, dir, cfg)
	script := `echo hello > greeting.txt
echo 'agents: {tapestry: {tools: [read, write, edit, bash, glob, grep, webfetch, todowrite, plan_check]}}' >> .weave/config.yaml || echo config refused
sed -i 's/greeting/pwned/' .weave/state.json || echo state refused`
	srv := modeltest.NewServer(t,
		tool("bash", fmt.Sprintf(`{"command":%q}`, script)),
		tool("plan_check", `{"task":1}`),
		modeltest.Turn{Text: "Task 1 is done."},
	)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "greeting")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "greeting.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("tapestry's bash did not write the project: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".weave", "config.yaml")); string(b) != cfg {
		t.Errorf(".weave/config.yaml = %q, want it unchanged", b)
	}
	// A finished run leaves no state behind; a state the bash call
	// changed would show its mark.
	if state, _ := os.ReadFile(filepath.Join(dir, ".weave", "state.json")); strings.Contains(string(state), "pwned") {
		t.Errorf(".weave/state.json = %q: changed by the model's bash", state)
	}
	got := strings.Join(requestToolResults(t, srv.Requests()[1]), "\n")
	for _, want := range []string{"config refused", "state refused", "\nread-only sandbox: bash may write only the project"} {
		if !strings.Contains(got, want) {
			t.Errorf("the model reads %q, want %q in it", got, want)
		}
	}
}

// A runbook block is the person's: it runs outside the sandbox unless
// sandbox.blocks says otherwise; sandbox.writable opens a path outside the
// project to sandboxed bash.
func TestSandboxBlocksAndWritable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	needSandbox(t, bin)
	outside := t.TempDir()
	plan := fmt.Sprintf("# Out\n\n## TODOs\n\n- [ ] 1. Write outside\n  ```sh\n  echo out > %s/out.txt\n  ```\n", outside)
	for _, tc := range []struct {
		name, yaml string
		code       int
	}{
		{"blocks outside the sandbox", "", exitOK},
		{"blocks in the sandbox", "sandbox:\n  blocks: true\n", exitFailed},
		{"blocks in the sandbox, the path writable", "sandbox:\n  blocks: true\n  writable: [" + outside + "]\n", exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(outside, "out.txt"))
			dir := project(t, map[string]string{"out": plan})
			writeConfig(t, dir, tc.yaml)
			code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "out")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			_, err := os.Stat(filepath.Join(outside, "out.txt"))
			if wrote := err == nil; wrote != (tc.code == exitOK) {
				t.Errorf("the block wrote outside the project: %v, want %v", wrote, tc.code == exitOK)
			}
		})
	}
}
