package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/weavehq/weave/bus/jsonrpc/jsonrpctest"
)

// A mistyped subcommand of a command that only groups others is a usage
// error, so a CI step with a typo fails instead of printing help and passing.
func TestUnknownSubcommandIsUsageError(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"plan", "valdiate", "x"}, `unknown command "valdiate" for "weave plan"; did you mean "validate"?`},
		{[]string{"config", "get", "x"}, `unknown command "get" for "weave config"`},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh" for "weave completion"`},
		{[]string{"hooks", "lsit"}, `did you mean "list"`},
	}
	for _, tc := range cases {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage {
			t.Errorf("weave %s: exit %d, want %d (stdout %q)", strings.Join(tc.args, " "), code, exitUsage, out)
		}
		if !strings.Contains(errOut, tc.want) {
			t.Errorf("weave %s: stderr %q, want it to contain %q", strings.Join(tc.args, " "), errOut, tc.want)
		}
	}
	// The group alone still prints its help and succeeds.
	if code, out, _ := runCLI(t, "plan"); code != exitOK || !strings.Contains(out, "Available Commands") {
		t.Errorf("weave plan: exit %d, stdout %q; want its help", code, out)
	}
}

// Every flag's help names its value by its type, never by words of its
// help text (pflag takes a backticked phrase as the value's name).
func TestFlagHelpNamesNoValueFromItsText(t *testing.T) {
	var check func(c *cobra.Command)
	check = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.Contains(name, " ") {
				t.Errorf("%s --%s shows its value as %q", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			check(sub)
		}
	}
	check(newRootCmd(context.Background(), &Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}))
	code, out, _ := runCLI(t, "start-work", "--help")
	if code != 0 || !strings.Contains(out, "--bus string") || !strings.Contains(out, "--skip ints") {
		t.Errorf("start-work --help = %d:\n%s\nwant --bus string and --skip ints", code, out)
	}
}

// The examples of `weave hooks test --help` run as written in a new project.
func TestHooksTestExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := t.TempDir()
	if code, _, errOut := runWeave(t, bin, dir, nil, "init"); code != 0 {
		t.Fatalf("weave init = %d: %s", code, errOut)
	}
	pathDir := filepath.Dir(bin)
	for _, line := range strings.Split(hooksTestExample, "\n") {
		line = strings.TrimSpace(line)
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(cleanEnv(t), "PATH="+pathDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", line, err, out)
		}
	}
}

// Piped, `status --bus` prints only the plans' tab-separated lines on
// standard output; the loop's state goes to standard error.
func TestStatusBusPipedStaysTabSeparated(t *testing.T) {
	face := jsonrpctest.Serve(t, "")
	dir := project(t, map[string]string{"p": "# P\n\n## TODOs\n\n- [ ] 1. One\n  ```sh\n  true\n  ```\n"})
	code, out, errOut := runCLI(t, "--dir", dir, "status", "--bus", face.URL)
	if code != 0 {
		t.Fatalf("status --bus = %d: %s", code, errOut)
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.Count(line, "\t") != 5 {
			t.Errorf("piped status line %q has not six tab-separated fields; stdout:\n%s", line, out)
		}
	}
	if !strings.Contains(errOut, "loop: nothing published on loop:current") {
		t.Errorf("stderr %q, want the loop's state there", errOut)
	}
}

// A runbook.shell that names no program stops start-work before any block,
// and doctor names it.
func TestMissingRunbookShellIsCaught(t *testing.T) {
	dir := project(t, map[string]string{"p": "# P\n\n## TODOs\n\n- [ ] 1. One\n  ```sh\n  touch ran.txt\n  ```\n"})
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("runbook:\n  shell: bsh-not-a-shell\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "--dir", dir, "start-work", "p")
	if code != exitUsage || !strings.Contains(errOut, `runbook.shell "bsh-not-a-shell" is not a program on this machine`) {
		t.Errorf("start-work with runbook.shell bsh-not-a-shell = %d %q, want a usage error naming it", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err == nil {
		t.Error("a block ran")
	}
	code, out, _ := runCLI(t, "--dir", dir, "doctor")
	if code == 0 || !strings.Contains(out, `FAIL shell    runbook.shell "bsh-not-a-shell"`) {
		t.Errorf("doctor = %d:\n%s\nwant a failed shell check", code, out)
	}
}
