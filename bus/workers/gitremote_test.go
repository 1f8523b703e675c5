package workers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/gitwork"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Someone who can push to the run's git remote moves the base's ref to
// code of their own, and pushes a result under an award's ref naming
// another commit: the worker refuses the base, the coordinator the result;
// and a worker not given the remote takes no assignment naming it.
func TestGitRemoteRefsHoldWhatTheyName(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mk := func(name, file string) string {
		d := filepath.Join(dir, name)
		gitOut(t, dir, "init", "-q", "-b", "main", d)
		if err := os.WriteFile(filepath.Join(d, file), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitOut(t, d, "add", ".")
		gitOut(t, d, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", name)
		return d
	}
	coord, evil := mk("coord", "a.txt"), mk("evil", "evil.txt")
	bare := filepath.Join(dir, "origin.git")
	gitOut(t, dir, "init", "-q", "--bare", bare)
	base, forged := gitOut(t, coord, "rev-parse", "HEAD"), gitOut(t, evil, "rev-parse", "HEAD")
	gitOut(t, evil, "push", "-q", bare, "HEAD:"+baseRef(base))

	wdir := filepath.Join(dir, "worker")
	gitOut(t, dir, "init", "-q", wdir)
	wrepo, err := gitwork.Open(ctx, wdir)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{repo: wrepo, opts: AgentOptions{Remotes: []string{bare}}}
	as := Assignment{Offer: Offer{Base: base, Remote: bare}, Award: "0123456789abcdef"}
	if err := a.fetchBase(ctx, as); err == nil || !strings.Contains(err.Error(), "not the base") {
		t.Fatalf("fetchBase of a forged base ref = %v, want a refusal", err)
	}
	if (&Agent{}).reaches(bare) || !a.reaches(bare) || !(&Agent{}).reaches("") {
		t.Fatal("reaches: a worker must use only the remotes it was given, and the bundle store always")
	}

	crepo, err := gitwork.Open(ctx, coord)
	if err != nil {
		t.Fatal(err)
	}
	c := &Coordinator{repo: crepo, opts: CoordinatorOptions{Remote: bare, RemoteURL: bare}}
	// The result names base; the ref named after it holds forged.
	gitOut(t, evil, "push", "-q", bare, "HEAD:"+resultRef(as.Award, base))
	if sha, err := c.fetchResult(ctx, Result{Award: as.Award, Commit: base}, "refs/weave/results/x"); err == nil && sha == base {
		t.Fatalf("fetchResult took %s from a ref holding %s", sha, forged)
	}
	if _, err := c.fetchResult(ctx, Result{Award: "../../x", Commit: base}, "refs/weave/results/x"); err == nil {
		t.Fatal("fetchResult took an award id that is not one")
	}
}
