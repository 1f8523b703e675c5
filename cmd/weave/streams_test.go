package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
)

// peakRSSEnv makes the test binary a launcher (TestMain): it runs its
// arguments as a command and writes the command's peak RSS to the file the
// variable names.
const peakRSSEnv = "WEAVE_TEST_PEAK_RSS_FILE"

// runWeaveRSS is runWeave that also returns the process's peak resident
// memory, as the kernel accounted it. On Linux a process's peak starts from
// the memory of the process it was started from, so weave is started from
// a fresh copy of the test binary rather than from this one, which holds
// the fake server's requests.
func runWeaveRSS(t *testing.T, bin, dir string, env []string, args ...string) (code int, stdout, stderr string, peak int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	figure := filepath.Join(t.TempDir(), "peak")
	cmd := exec.CommandContext(ctx, self, append([]string{bin}, args...)...)
	cmd.Dir, cmd.Env = dir, append(slices.Clone(env), peakRSSEnv+"="+figure)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(figure)
	if err != nil {
		t.Fatalf("the launcher wrote no peak: %v (stderr %s)", err, errOut.String())
	}
	peak, err = strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String(), peak
}

// launchMeasured runs args with this process's stdio and environment (less
// peakRSSEnv), writes its peak RSS in bytes to out, and returns its exit
// code.
func launchMeasured(out string, args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, peakRSSEnv+"=") })
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "launch:", err)
		return 125
	}
	peak := peakRSS(cmd.ProcessState)
	if err := os.WriteFile(out, []byte(strconv.FormatInt(peak, 10)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "launch:", err)
		return 125
	}
	return code
}

// modelEnv is chatEnv for provider kind.
func modelEnv(t *testing.T, srv *modeltest.Server, kind string) []string {
	env := chatEnv(t, srv)
	if kind == "anthropic" {
		for i, kv := range env {
			switch {
			case strings.HasPrefix(kv, "WEAVE_MODEL_PROVIDER="):
				env[i] = "WEAVE_MODEL_PROVIDER=anthropic"
			case strings.HasPrefix(kv, "WEAVE_MODEL_BASE_URL="):
				env[i] = "WEAVE_MODEL_BASE_URL=" + srv.URL
			}
		}
	}
	return env
}

// TestHostileModelStreamsThroughTheBinary runs weave chat -p against a model
// endpoint that misbehaves: a stream without end is stopped at the answer's
// bounds with a bounded peak memory, and a stream cut before its finish
// event is asked again and then a failure, never an answer.
func TestHostileModelStreamsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind+"/endless stream", func(t *testing.T) {
			// The server stops after 256 MiB, so that a weave without
			// the bound ends too (having read all of it).
			srv := modeltest.NewServer(t, modeltest.Turn{Fault: modeltest.FaultEndless, FaultBytes: 256 << 20})
			start := time.Now()
			code, _, errOut, peak := runWeaveRSS(t, bin, project(t, nil), modelEnv(t, srv, kind), "chat", "-p", "hi")
			t.Logf("%s: exit %d after %s, peak RSS %d MiB, server wrote %d MiB", kind, code, time.Since(start).Round(time.Millisecond), peak>>20, srv.FaultBytesSent()>>20)
			if code == 0 || !strings.Contains(errOut, "longer than its bounds") {
				t.Errorf("exit %d, stderr %q; want a failure saying the answer passed its bounds", code, errOut)
			}
			if peak > 128<<20 {
				t.Errorf("peak RSS %d MiB, want at most 128 MiB", peak>>20)
			}
		})

		t.Run(kind+"/cut stream", func(t *testing.T) {
			t.Parallel()
			// Five cuts, a body ended cleanly or a connection dropped:
			// the call and its four retries.
			var turns []modeltest.Turn
			for i := range 5 {
				fault := modeltest.FaultCut
				if i%2 == 1 {
					fault = modeltest.FaultAbort
				}
				turns = append(turns, modeltest.Turn{Fault: fault, Text: "Half of an answer that the connection cuts short."})
			}
			srv := modeltest.NewServer(t, turns...)
			dir := project(t, nil)
			code, _, errOut, _ := runWeaveRSS(t, bin, dir, modelEnv(t, srv, kind), "chat", "-p", "hi")
			if code == 0 || !strings.Contains(errOut, "before its finish event") || !strings.Contains(errOut, "tried 5 times") {
				t.Errorf("exit %d, stderr %q; want a failure saying the stream ended before its finish event, tried 5 times", code, errOut)
			}
			if n := len(srv.Requests()); n != 5 {
				t.Errorf("%d requests, want 5 (four retries)", n)
			}
		})

		t.Run(kind+"/garbage", func(t *testing.T) {
			t.Parallel()
			var turns []modeltest.Turn
			for range 5 {
				turns = append(turns, modeltest.Turn{Fault: modeltest.FaultGarbage})
			}
			srv := modeltest.NewServer(t, turns...)
			code, out, errOut, _ := runWeaveRSS(t, bin, project(t, nil), modelEnv(t, srv, kind), "chat", "-p", "hi")
			if code == 0 || !strings.Contains(errOut, "model") {
				t.Errorf("exit %d, stdout %q, stderr %q; want a failure", code, out, errOut)
			}
		})
	}

	t.Run("model.max_tokens on the stream", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.Turn{Fault: modeltest.FaultEndless, FaultChunk: 3, FaultBytes: 1 << 20})
		env := append(chatEnv(t, srv), "WEAVE_MODEL_MAX_TOKENS=100")
		code, out, errOut, _ := runWeaveRSS(t, bin, project(t, nil), env, "chat", "-p", "hi")
		if code == 0 || !strings.Contains(errOut, "max_tokens 100") || len(out) > 150*3+1 {
			t.Errorf("exit %d, %d bytes of stdout, stderr %q; want a failure naming max_tokens 100 after at most 150 pieces", code, len(out), errOut)
		}
	})

	t.Run("an answer JSON escapes six-fold stays in sessions list", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "START" + strings.Repeat("\x01", 3<<20) + "END"})
		dir := project(t, nil)
		code, _, errOut, _ := runWeaveRSS(t, bin, dir, chatEnv(t, srv), "chat", "-p", "hi")
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		code, out, errOut, _ := runWeaveRSS(t, bin, dir, chatEnv(t, srv), "sessions", "list")
		if code != 0 || strings.Count(out, "\n") != 1 {
			t.Errorf("sessions list: exit %d, stdout %q, stderr %q; want the one session", code, out, errOut)
		}
	})

	t.Run("cut then whole", func(t *testing.T) {
		srv := modeltest.NewServer(t,
			modeltest.Turn{Fault: modeltest.FaultCut, Text: "Half of a first answer that never ends."},
			modeltest.Turn{Text: "The whole answer."})
		code, out, errOut, peak := runWeaveRSS(t, bin, project(t, nil), chatEnv(t, srv), "chat", "-p", "hi")
		t.Logf("peak RSS %d MiB", peak>>20)
		if code != 0 || !strings.HasSuffix(out, "The whole answer.\n") || !strings.Contains(errOut, "asking again") {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0, the whole answer last, and a note that the call was asked again", code, out, errOut)
		}
	})
}
