package main

// The ways a test runs weave: in this process (runCLI, runCLIWith), as the
// built binary (runBin, runBinIn, runJSON, runWeave, all through runCmd),
// or as a started process to signal (weaveCmd, startWatch). Each bounds a
// run that hangs with a failure guard only a real hang reaches.
//
// Each trusts the project config it runs with, as a CI job does: it sets
// WEAVE_TRUST=1 and a state directory of the test's own
// (XDG_STATE_HOME), unless the environment it is given sets WEAVE_TRUST
// itself. The trust gate's own tests set WEAVE_TRUST= (empty) to be asked
// as a person is (trust_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/trust"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// weaveBin builds the weave binary once per test process and returns its
// path, for tests that run weave as a user does.
func weaveBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "weave-bin")
		if binErr != nil {
			return
		}
		binPath, binErr = buildBinary(binDir, "weave")
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// buildBinary runs go build for this package into dir with extra build
// flags.
func buildBinary(dir, name string, flags ...string) (string, error) {
	out := filepath.Join(dir, name)
	args := append(append([]string{"build", "-o", out}, flags...), ".")
	if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", &buildError{err: err, out: string(b)}
	}
	return out, nil
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// binResult is what one run of the binary did.
type binResult struct {
	code     int
	out, err string
}

// runBin runs the built weave with args, with the user config kept out
// and env added to the environment, and returns what it did.
func runBin(t testing.TB, env []string, stdin string, args ...string) binResult {
	t.Helper()
	return runBinary(t, weaveBin(t), env, stdin, args...)
}

func runBinary(t testing.TB, bin string, env []string, stdin string, args ...string) binResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cleanEnv(t), env...)
	cmd.Stdin = strings.NewReader(stdin)
	return runCmd(t, cmd)
}

// runBinIn runs the built weave with --dir dir and args.
func runBinIn(t *testing.T, dir string, args ...string) binResult {
	t.Helper()
	return runBin(t, nil, "", append([]string{"--dir", dir}, args...)...)
}

// runJSON runs the built weave with args and decodes what it printed into v.
func runJSON(t *testing.T, v any, args ...string) binResult {
	t.Helper()
	r := runBin(t, nil, "", args...)
	if err := json.Unmarshal([]byte(r.out), v); err != nil {
		t.Fatalf("weave %s printed %q (stderr %q), not JSON: %v", strings.Join(args, " "), r.out, r.err, err)
	}
	return r
}

// runWeave runs bin in dir with the environment env (and the trust the
// runners give, see trustingEnv), killing it if it hangs past two minutes.
func runWeave(t *testing.T, bin, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, trustingEnv(t, env)
	r := runCmd(t, cmd)
	return r.code, r.out, r.err
}

// runCmd runs cmd, collecting its output, and fails the test when it could
// not run at all; an exit status is the result's code.
func runCmd(t testing.TB, cmd *exec.Cmd) binResult {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %s: %v", strings.Join(cmd.Args[1:], " "), err)
		}
		code = ee.ExitCode()
	}
	return binResult{code: code, out: out.String(), err: errOut.String()}
}

// buildWeave is the weave binary, built once per test process, for tests
// that run it as a process.
func buildWeave(t *testing.T) string {
	t.Helper()
	return weaveBin(t)
}

// runCLI runs weave in this process with args and a fresh user config
// directory, and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCLIWith(t, t.TempDir(), args...)
}

// runCLIWith is runCLI with the user config directory xdg, which a test
// may share between runs. A run that has not returned after a minute fails
// the test: a failure guard, never a timing assertion.
func runCLIWith(t *testing.T, xdg string, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	trustInProcess(t)
	go func() {
		var out, errOut bytes.Buffer
		code := runArgs(context.Background(), &Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
		done <- result{code, out.String(), errOut.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(time.Minute):
		t.Fatalf("weave %s did not return within a minute", strings.Join(args, " "))
	}
	return 0, "", ""
}

// cleanEnv is the test's environment without WEAVE_* variables and colour
// settings, with a fresh user config directory.
func cleanEnv(t testing.TB) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "WEAVE_") || k == "NO_COLOR" || k == "CLICOLOR_FORCE" || k == "XDG_CONFIG_HOME" || k == "XDG_STATE_HOME" {
			continue
		}
		env = append(env, kv)
	}
	return trustingEnv(t, append(env, "XDG_CONFIG_HOME="+t.TempDir()))
}

// trustInProcess is trustingEnv for weave run in this process: it sets
// WEAVE_TRUST=1 and a state directory of the test's own, unless the test
// set WEAVE_TRUST itself.
func trustInProcess(t *testing.T) {
	t.Helper()
	if _, set := os.LookupEnv(trust.Env); !set {
		t.Setenv(trust.Env, "1")
		t.Setenv("XDG_STATE_HOME", t.TempDir())
	}
}

// trustingEnv is env with the project config trusted, as a CI job trusts
// it: WEAVE_TRUST=1 and a state directory of the test's own, so that no
// record lands in the user's. An env that sets WEAVE_TRUST (to anything,
// "" included) is the test's own choice and is kept as it is.
func trustingEnv(t testing.TB, env []string) []string {
	t.Helper()
	if env == nil {
		// A nil environment is the test's own, as exec.Cmd takes it.
		env = os.Environ()
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, trust.Env+"=") {
			return env
		}
	}
	return append(env, trust.Env+"=1", "XDG_STATE_HOME="+t.TempDir())
}

// weaveCmd is weave --dir dir args..., with its own user config directory.
func weaveCmd(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(weaveBin(t), append([]string{"--dir", dir}, args...)...)
	cmd.Env = trustingEnv(t, append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir()), env...))
	return cmd
}

// startWatch starts the built weave with args, its standard output going
// to out, and returns a function that interrupts it (as Ctrl-C does) and
// waits for it, failing the test unless it exits 0.
func startWatch(t *testing.T, out io.Writer, args ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(weaveBin(t), args...)
	cmd.Env = cleanEnv(t)
	cmd.Stdout = out
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("weave %s after Ctrl-C: %v (stderr %q)", strings.Join(args, " "), err, errOut.String())
		}
	}
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return stop
}
