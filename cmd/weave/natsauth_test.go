package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
)

// natsWithToken starts a NATS server that wants token and returns its URL
// without credentials.
func natsWithToken(t *testing.T, token string) string {
	t.Helper()
	return bustest.StartNATSConfig(t, `authorization { token: "`+token+`" }`).URL()
}

// busServeFirstLines runs the built `weave bus serve --ws` with env until it
// has printed its ws line, then stops it as Ctrl-C does, and returns what
// it printed.
func busServeFirstLines(t *testing.T, env []string) string {
	t.Helper()
	cmd := exec.Command(weaveBin(t), "--dir", t.TempDir(), "bus", "serve", "--ws", "127.0.0.1:0")
	cmd.Env = append(cleanEnv(t), append(env, "XDG_RUNTIME_DIR="+t.TempDir())...)
	out := &lines{ch: make(chan string, 16)}
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	var got strings.Builder
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line := <-out.ch:
			got.WriteString(line + "\n")
			if strings.HasPrefix(line, "ws") {
				return got.String()
			}
		case <-deadline:
			t.Fatalf("weave bus serve printed no ws address:\n%s\nstderr %s", got.String(), errOut.String())
		}
	}
}

// TestNATSCredentialsAreNeverShown: a bus URL with credentials in it works,
// but the credentials appear nowhere weave shows or passes on: not in `bus
// serve`'s output, not in `config show`, not in the log file, not in the
// environment of a runbook block, which gets the URL without them.
func TestNATSCredentialsAreNeverShown(t *testing.T) {
	const token = "tok-NEVER-SHOWN-5521"
	plain := natsWithToken(t, token)
	secretURL := strings.Replace(plain, "nats://", "nats://"+token+"@", 1)
	env := []string{"WEAVE_BUS_URL=" + secretURL}

	out := busServeFirstLines(t, env)
	if strings.Contains(out, token) || !strings.Contains(out, "***@") {
		t.Errorf("bus serve printed the URL's credentials or did not say they are there:\n%s", out)
	}

	r := runBin(t, env, "", "--dir", t.TempDir(), "config", "show", "--sources")
	if r.code != exitOK || strings.Contains(r.out+r.err, token) {
		t.Errorf("config show = %d and shows the token:\n%s%s", r.code, r.out, r.err)
	}
	r = runBin(t, env, "", "--dir", t.TempDir(), "config", "show", "--json")
	if strings.Contains(r.out+r.err, token) {
		t.Errorf("config show --json shows the token:\n%s", r.out)
	}

	plan := "# P\n\n## TODOs\n\n- [ ] 1. Look around\n  ```sh\n  env > env.txt\n  ```\n"
	dir := project(t, map[string]string{"p": plan})
	r = runBin(t, env, "", "--dir", dir, "start-work", "--bus", secretURL, "p")
	if r.code != exitOK {
		t.Fatalf("start-work --bus with the token in the URL = %d\nout %s\nerr %s", r.code, r.out, r.err)
	}
	if strings.Contains(r.out+r.err, token) {
		t.Errorf("start-work showed the token:\n%s%s", r.out, r.err)
	}
	blockEnv, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(blockEnv), token) {
		t.Errorf("the runbook block's environment holds the token:\n%s", grepLines(string(blockEnv), token))
	}
	if !strings.Contains(string(blockEnv), "WEAVE_BUS_URL="+plain+"\n") {
		t.Errorf("the block did not get the bus URL without credentials (%s):\n%s", plain, grepLines(string(blockEnv), "WEAVE_BUS"))
	}
	assertNotInDir(t, filepath.Join(dir, ".weave"), token)

	r = runBin(t, env, "", "--dir", project(t, map[string]string{"p": plan}), "doctor")
	if !strings.Contains(r.out+r.err, "***@") || strings.Contains(r.out+r.err, token) {
		t.Errorf("doctor does not show the bus redacted, or shows the token:\n%s%s", r.out, r.err)
	}

	// A URL the server refuses: the error says so without the token.
	wrong := strings.Replace(plain, "nats://", "nats://tok-WRONG-0042@", 1)
	r = runBin(t, nil, "", "--dir", project(t, map[string]string{"p": plan}), "status", "--bus", wrong)
	if !strings.Contains(r.err, "refused the credentials") || strings.Contains(r.out+r.err, "tok-WRONG-0042") {
		t.Errorf("status on a bus that refuses the token does not say so, or shows the token:\n%s%s", r.out, r.err)
	}
}

// TestNATSCredentialFilesStayWithWeave: with the token in a file and the
// password of a user in a variable named by config, start-work joins the
// bus, and no block sees the secret, the variable or the file's path.
func TestNATSCredentialFilesStayWithWeave(t *testing.T) {
	const token = "tok-FILE-ONLY-8830"
	url := natsWithToken(t, token)
	tokenFile := filepath.Join(t.TempDir(), "nats-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Look around\n  ```sh\n  env > env.txt\n  ```\n"
	dir := project(t, map[string]string{"p": plan})
	r := runBin(t, []string{"WEAVE_BUS_NATS_TOKEN_FILE=" + tokenFile}, "", "--dir", dir, "start-work", "--bus", url, "p")
	if r.code != exitOK {
		t.Fatalf("start-work with bus.nats.token_file = %d\nout %s\nerr %s", r.code, r.out, r.err)
	}
	blockEnv, _ := os.ReadFile(filepath.Join(dir, "env.txt"))
	for _, s := range []string{token, tokenFile} {
		if strings.Contains(string(blockEnv), s) {
			t.Errorf("the block's environment holds %q:\n%s", s, grepLines(string(blockEnv), s))
		}
	}

	const pw = "pw-ENV-ONLY-1907"
	url = bustest.StartNATSConfig(t, `authorization { users: [{user: weave, password: "`+pw+`"}] }`).URL()
	dir = project(t, map[string]string{"p": plan})
	r = runBin(t, []string{"WEAVE_BUS_NATS_USER=weave", "WEAVE_BUS_NATS_PASSWORD_ENV=TEST_BUS_PASSWORD", "TEST_BUS_PASSWORD=" + pw},
		"", "--dir", dir, "start-work", "--bus", url, "p")
	if r.code != exitOK {
		t.Fatalf("start-work with bus.nats.password_env = %d\nout %s\nerr %s", r.code, r.out, r.err)
	}
	blockEnv, _ = os.ReadFile(filepath.Join(dir, "env.txt"))
	if strings.Contains(string(blockEnv), pw) {
		t.Errorf("the block's environment holds the password:\n%s", grepLines(string(blockEnv), pw))
	}
	assertNotInDir(t, filepath.Join(dir, ".weave"), pw)

	// A variable whose name does not mark it secret is refused: children
	// would get it.
	r = runBin(t, []string{"WEAVE_BUS_NATS_USER=weave", "WEAVE_BUS_NATS_PASSWORD_ENV=BUSPW", "BUSPW=" + pw},
		"", "--dir", project(t, map[string]string{"p": plan}), "start-work", "--bus", url, "p")
	if r.code == exitOK || !strings.Contains(r.err, "does not look secret") || strings.Contains(r.out+r.err, pw) {
		t.Errorf("start-work with bus.nats.password_env=BUSPW = %d, want a refusal that names why:\n%s%s", r.code, r.out, r.err)
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// assertNotInDir fails when any file under dir (logs, state, sessions)
// holds secret.
func assertNotInDir(t *testing.T, dir, secret string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
}
