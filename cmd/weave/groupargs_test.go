package main

import (
	"strings"
	"testing"
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
