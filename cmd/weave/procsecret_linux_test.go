package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/internal/trust"
)

// plantedSecrets are put in weave's environment: the model key, the bus
// token and secrets of the kinds a developer's shell holds.
var plantedSecrets = map[string]string{
	"WEAVE_TEST_MODEL_KEY":  chatKey,
	"OPENAI_API_KEY":        "sk-planted-openai-5150",
	"ANTHROPIC_API_KEY":     "sk-ant-planted-5150",
	"WEAVE_BUS_TOKEN":       "planted-bus-token-5150",
	"AWS_SECRET_ACCESS_KEY": "planted-aws-secret-5150",
	"GITHUB_TOKEN":          "ghp_planted5150",
}

// procReadScript is the hostile model's bash call: it reads the
// environment of its parent and of every weave process above it, and
// opens weave's memory (which takes what ptrace takes).
const procReadScript = `p=$PPID; n=0
while [ "$p" -gt 1 ] && [ $n -lt 10 ]; do
  if [ "$(cat /proc/$p/comm)" = weave ]; then
    echo "weave is pid $p"; tr '\0' '\n' < /proc/$p/environ
    if (exec 3< /proc/$p/mem) 2>/dev/null; then echo "weave's memory opened"; else echo "weave's memory refused"; fi
  fi
  p=$(awk '{print $4}' /proc/$p/stat); n=$((n+1))
done
tr '\0' '\n' < /proc/$PPID/environ
echo end of reads`

// unprivileged returns the credential a root test runs weave under (the
// user UNPRIVILEGED_TEST_USER names, .ci/run's, else nobody), or nil when the
// test is not root: then weave runs as the developer, which is the attack
// itself (a same-user process reading weave's /proc). Root reads any
// process's /proc whatever weave does, so a root test must switch.
func unprivileged(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	name := os.Getenv("UNPRIVILEGED_TEST_USER")
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("running as root and there is no user %s to run weave as (root reads every /proc/<pid>/environ, so the test needs an unprivileged user; .ci/run creates one): %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// TestNoSecretThroughProc plants secrets in weave's environment and has
// every kind of child weave starts try to read them through /proc: the
// model's bash call (its parent's and every weave ancestor's environ), a
// command hook (its parent's) and a hook plugin (WEAVE_HOST_PID's and its
// parent's). Weave runs as an unprivileged user, as its children do. No
// planted secret may appear in what they read, in the model's requests,
// in weave's output or anywhere under .weave/.
func TestNoSecretThroughProc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary and a plugin")
	}
	cred := unprivileged(t)
	base, err := os.MkdirTemp("", "weave-proc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	bin := filepath.Join(base, "weave")
	copyFile(t, buildWeave(t), bin, 0o755)
	dir := filepath.Join(base, "project")
	record := filepath.Join(dir, "plugin-read.txt")
	buildGo(t, "./cmd/weave/testdata/procreader", filepath.Join(dir, ".weave", "plugins", "procreader"))
	hook := `{ tr '\0' '\n' < /proc/$PPID/environ; } > "$WEAVE_PROJECT_DIR/hook-read.txt" 2>&1; echo "hook ran under $PPID" >> "$WEAVE_PROJECT_DIR/hook-read.txt"`
	// The bash call runs outside the sandbox here, as where none can be
	// built: the non-dumpable host is what refuses it (the sandboxed read
	// is TestSandboxNoSecretThroughProc's).
	cfg := "sandbox:\n  mode: off\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: " + strconvQuote(hook) + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
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

	srv := modeltest.NewServer(t,
		modeltest.Turn{Text: "Reading.", ToolCalls: []modeltest.ToolCall{{Name: "bash", Args: fmt.Sprintf(`{"command":%q}`, procReadScript)}}},
		modeltest.Turn{Text: "Done."},
	)
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(base, "home"), "XDG_CONFIG_HOME=" + filepath.Join(base, "xdg"),
		"WEAVE_MODEL_PROVIDER=openai", "WEAVE_MODEL_NAME=fake-model", "WEAVE_MODEL_BASE_URL=" + srv.OpenAIURL(),
		"WEAVE_MODEL_API_KEY_ENV=WEAVE_TEST_MODEL_KEY", "WEAVE_RECORD_FILE=" + record,
		// The hooks above are this test's own config: trusted, as a CI job
		// trusts its project's (the record lands under HOME).
		trust.Env + "=1",
	}
	for k, v := range plantedSecrets {
		env = append(env, k+"="+v)
	}
	cmd := exec.Command(bin, "--dir", dir, "chat", "-p", "read the environment")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("weave chat: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2\nstderr: %s", len(reqs), errOut.String())
	}
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := reqs[1].Decode(&body); err != nil {
		t.Fatal(err)
	}
	var result string
	for _, m := range body.Messages {
		if m.Role == "tool" {
			result = m.Content
		}
	}
	// The reads were made, and refused: the test proves nothing otherwise.
	if !strings.Contains(result, "weave is pid ") || !strings.Contains(result, "Permission denied") || !strings.Contains(result, "end of reads") {
		t.Errorf("the bash call's result = %q, want weave found and its environ refused", result)
	}
	if !strings.Contains(result, "weave's memory refused") || strings.Contains(result, "weave's memory opened") {
		t.Errorf("the bash call's result = %q, want weave's memory refused", result)
	}
	hookRead := readAll(t, filepath.Join(dir, "hook-read.txt"))
	if !strings.Contains(hookRead, "hook ran under") || !strings.Contains(hookRead, "Permission denied") {
		t.Errorf("the command hook read %q, want its read of weave's environ refused", hookRead)
	}
	pluginRead := readAll(t, record)
	if strings.Count(pluginRead, "permission denied") != 2 {
		t.Errorf("the plugin read %q, want both reads of weave's environ refused", pluginRead)
	}
	places := map[string]string{"the bash call's result": result, "the command hook's read": hookRead,
		"the plugin's read": pluginRead, "weave's output": out.String() + errOut.String()}
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
}

func readAll(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
	}
	return string(b)
}

func copyFile(t *testing.T, from, to string, mode fs.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
