package gitwork_test

import (
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestReadCommitAgreesWithGit reads commits whose messages a hostile
// worker might shape so that a reading of their trailers other than git's
// would differ from git's: ReadCommit, which reads a plain message's
// trailers from the commit's file itself, says what git log says of every
// one (the Weave-* trailers are what a landing trusts).
func TestReadCommitAgreesWithGit(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	msgs := []string{
		"Task\n\nWeave-Plan: p\nWeave-Task: 1\nWeave-Attempt: a\n",
		"Task\n\nWeave-Plan: p\nWeave-Task: 1\n# Weave-Task: 2\n",
		"Task\n\nWeave-Plan: p\nWeave-Task: 1\n\n# comment\n",
		"Task\n\nWeave-Plan: p\n---\nWeave-Task: 2\n",
		"Task\n\nWeave-Plan: p\nWeave-Task: 1\n  continued\n",
		"Task\n\nWeave-Task: 1\nConflicts:\n\tfile\n",
		"Weave-Plan: p\nWeave-Task: 1\n",
		"Task\n\nbody\n\nWeave-Plan: p\nWeave-Task: 3\nnot a trailer\n",
		"Task\n\nWeave-Plan : p\nWeave-Task: 1\n",
		"Task\n\nWeave-Plan: p\r\nWeave-Task: 1\n",
		"Task\n\nWeave-Task: 1\nWeave-Task: 2\n",
		"Task\n\nSigned-off-by: x <x@y>\n(cherry picked from commit 0000000000000000000000000000000000000000)\n",
	}
	for _, msg := range msgs {
		cmd := exec.Command("git", "-C", r.Root, "-c", "core.commentChar=#", "commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", "-")
		cmd.Stdin = strings.NewReader(msg)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("commit %q: %v\n%s", msg, err, out)
		}
		sha := strings.TrimSpace(git(t, r.Root, "rev-parse", "HEAD"))
		got, err := r.ReadCommit(ctx, sha)
		if err != nil {
			t.Fatalf("ReadCommit(%q): %v", msg, err)
		}
		want := map[string]string{}
		for _, line := range strings.Split(git(t, r.Root, "log", "-1", "--format=%(trailers:only,unfold)", sha), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				want[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		if !reflect.DeepEqual(got.Trailers, want) {
			t.Errorf("message %q: ReadCommit's trailers %v, git's %v", msg, got.Trailers, want)
		}
		if parent := strings.TrimSpace(git(t, r.Root, "rev-parse", sha+"^")); len(got.Parents) != 1 || got.Parents[0] != parent {
			t.Errorf("message %q: parents %v, want %s", msg, got.Parents, parent)
		}
	}
	// A plain message is read without git at all.
	if _, err := r.CommonDir(ctx); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-C", r.Root, "commit", "-q", "--allow-empty", "-F", "-")
	cmd.Stdin = strings.NewReader(msgs[0])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	sha := strings.TrimSpace(git(t, r.Root, "rev-parse", "HEAD"))
	t.Setenv("PATH", t.TempDir())
	got, err := r.ReadCommit(ctx, sha)
	if err != nil || got.Trailers["Weave-Attempt"] != "a" {
		t.Fatalf("ReadCommit of a plain message without git = %+v, %v; want it read from the commit's file", got, err)
	}
}
