package gitwork_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/gitwork"
)

// A commit pushed to a ref of a remote comes back by that ref; the ref
// can be deleted; a URL that would run a command (ext::) is never used.
func TestRemoteRefs(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	head, _, _ := r.Head(ctx)
	bare := filepath.Join(t.TempDir(), "o.git")
	git(t, r.Root, "init", "-q", "--bare", bare)
	git(t, r.Root, "remote", "add", "origin", bare)
	if u, err := r.RemoteURL(ctx, "origin"); err != nil || u != bare {
		t.Fatalf("RemoteURL(origin) = %q, %v", u, err)
	}
	if err := r.PushRef(ctx, "origin", head, "refs/weave/base/"+head); err != nil {
		t.Fatal(err)
	}
	if got, err := r.FetchRef(ctx, bare, "refs/weave/base/"+head, "refs/weave/got"); err != nil || got != head {
		t.Fatalf("FetchRef = %s, %v; want %s", got, err, head)
	}
	if err := r.DeleteRemoteRef(ctx, "origin", "refs/weave/base/"+head); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteRemoteRef(ctx, "origin", "refs/weave/base/"+head); err != nil {
		t.Fatalf("deleting a ref already gone: %v", err)
	}

	marker := filepath.Join(t.TempDir(), "ran")
	for _, remote := range []string{"ext::sh -c touch% " + marker, "--upload-pack=touch " + marker} {
		if _, err := r.FetchRef(ctx, remote, "refs/heads/main", "refs/weave/x"); err == nil {
			t.Errorf("FetchRef from %q succeeded", remote)
		}
		if err := r.PushRef(ctx, remote, head, "refs/weave/x"); err == nil {
			t.Errorf("PushRef to %q succeeded", remote)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a remote's URL ran a command")
	}
	if got := gitwork.RedactURL("https://me:s3cret@h.example/p.git"); strings.Contains(got, "s3cret") {
		t.Errorf("RedactURL = %q", got)
	}
}
