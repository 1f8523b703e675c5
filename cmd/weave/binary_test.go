package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return binResult{code: code, out: out.String(), err: errOut.String()}
}

// cleanEnv is the test's environment without WEAVE_* variables and colour
// settings, with a fresh user config directory.
func cleanEnv(t testing.TB) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "WEAVE_") || k == "NO_COLOR" || k == "CLICOLOR_FORCE" || k == "XDG_CONFIG_HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "XDG_CONFIG_HOME="+t.TempDir())
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
