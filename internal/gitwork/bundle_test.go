package gitwork_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/gitwork"
)

// TestBundleRoundTrip sends a run's integration head to a repository that
// has nothing, makes a task's commit there, and brings only that commit
// back to land it: code travels without a shared file system or server.
func TestBundleRoundTrip(t *testing.T) {
	ctx := context.Background()
	coord := repo(t)
	base, _, _ := coord.Head(ctx)

	var full bytes.Buffer
	if err := coord.Bundle(ctx, &full, base, ""); err != nil {
		t.Fatal(err)
	}
	wdir := t.TempDir()
	git(t, wdir, "init", "-q", "-b", "main")
	worker, err := gitwork.Open(ctx, wdir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := worker.FetchBundle(ctx, bytes.NewReader(full.Bytes()), "refs/weave/base")
	if err != nil || got != base {
		t.Fatalf("FetchBundle(base) = %s, %v; want %s", got, err, base)
	}
	commit := task(t, worker, 1, base, map[string]string{"b.txt": "from afar\n"})

	var back bytes.Buffer
	if err := worker.Bundle(ctx, &back, commit, base); err != nil {
		t.Fatal(err)
	}
	got, err = coord.FetchBundle(ctx, bytes.NewReader(back.Bytes()), "refs/heads/weave/p-task-1")
	if err != nil || got != commit {
		t.Fatalf("FetchBundle(result) = %s, %v; want %s", got, err, commit)
	}
	landed, err := coord.Land(ctx, base, commit, gitwork.LandRebase)
	if err != nil {
		t.Fatal(err)
	}
	if out := git(t, coord.Root, "show", landed+":b.txt"); out != "from afar\n" {
		t.Fatalf("b.txt landed = %q", out)
	}
	// The bundle's naming ref is gone from both sides.
	for _, r := range []*gitwork.Repo{coord, worker} {
		if out := git(t, r.Root, "for-each-ref", "refs/weave/bundles/"); out != "" {
			t.Fatalf("bundle refs left in %s: %s", r.Root, out)
		}
	}
	// A bundle of nothing is refused rather than sent empty.
	if err := coord.Bundle(ctx, &bytes.Buffer{}, base, base); err == nil {
		t.Fatal("Bundle(tip, tip) succeeded")
	}
}

// TestFetchBundleRefusesForeign feeds FetchBundle what a hostile peer
// might send: bytes that are no bundle, a bundle of other refs than the
// one commit Bundle names, and a bundle whose basis the repository lacks.
func TestFetchBundleRefusesForeign(t *testing.T) {
	ctx := context.Background()
	coord := repo(t)
	base, _, _ := coord.Head(ctx)
	if _, err := coord.FetchBundle(ctx, strings.NewReader("# v2 git bundle\nnonsense\n"), "refs/weave/x"); err == nil {
		t.Fatal("FetchBundle took garbage")
	}
	// A bundle naming refs/heads/main (and more) could move any branch.
	other := repo(t)
	write(t, other.Root, "c.txt", "c\n")
	git(t, other.Root, "add", ".")
	git(t, other.Root, "commit", "-q", "-m", "two")
	git(t, other.Root, "branch", "extra")
	file := filepath.Join(t.TempDir(), "b.bundle")
	git(t, other.Root, "bundle", "create", "-q", file, "main", "extra")
	if out, err := exec.Command("cat", file).Output(); err != nil {
		t.Fatal(err)
	} else if _, err := coord.FetchBundle(ctx, bytes.NewReader(out), "refs/weave/x"); !errors.Is(err, gitwork.ErrBadBundle) {
		t.Fatalf("FetchBundle(two refs) = %v, want ErrBadBundle", err)
	}
	// A bundle that builds on a commit the repository has not got ("two").
	write(t, other.Root, "d.txt", "d\n")
	git(t, other.Root, "add", ".")
	git(t, other.Root, "commit", "-q", "-m", "three")
	head, _, _ := other.Head(ctx)
	var b bytes.Buffer
	if err := other.Bundle(ctx, &b, head, head+"~1"); err != nil {
		t.Fatal(err)
	}
	if _, err := coord.FetchBundle(ctx, &b, "refs/weave/x"); err == nil {
		t.Fatal("FetchBundle without the basis succeeded")
	}
	if _, err := coord.FetchBundle(ctx, strings.NewReader(""), "main"); err == nil {
		t.Fatal("FetchBundle into a short ref name succeeded")
	}
	if got, _ := coord.RevParse(ctx, "main"); got != base {
		t.Fatalf("main moved to %s", got)
	}
}

// TestUnpackBundle writes a bundle's objects without moving a ref: a
// whole history large enough that git keeps it as a pack, then a task's
// commit over it; a bundle whose basis the repository lacks fails, its
// commit not written, as does one whose pack lacks the tip it names.
func TestUnpackBundle(t *testing.T) {
	ctx := context.Background()
	coord := repo(t)
	for i := range 120 {
		write(t, coord.Root, fmt.Sprintf("many/f%03d.txt", i), fmt.Sprintf("%d\n", i))
	}
	git(t, coord.Root, "add", ".")
	git(t, coord.Root, "commit", "-q", "-m", "many")
	base, _, _ := coord.Head(ctx)
	var full bytes.Buffer
	if err := coord.Bundle(ctx, &full, base, ""); err != nil {
		t.Fatal(err)
	}
	wdir := t.TempDir()
	git(t, wdir, "init", "-q", "-b", "main")
	worker, err := gitwork.Open(ctx, wdir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := worker.UnpackBundle(ctx, full.Bytes()); err != nil || got != base {
		t.Fatalf("UnpackBundle(whole history) = %s, %v; want %s", got, err, base)
	}
	if refs := git(t, wdir, "for-each-ref"); refs != "" {
		t.Fatalf("UnpackBundle moved refs: %s", refs)
	}
	commit := task(t, worker, 1, base, map[string]string{"b.txt": "from afar\n"})
	var back bytes.Buffer
	if err := worker.Bundle(ctx, &back, commit, base); err != nil {
		t.Fatal(err)
	}
	if got, err := coord.UnpackBundle(ctx, back.Bytes()); err != nil || got != commit {
		t.Fatalf("UnpackBundle(result) = %s, %v; want %s", got, err, commit)
	}
	// The task's commit over base, sent to a repository without base.
	empty := t.TempDir()
	git(t, empty, "init", "-q", "-b", "main")
	bare, err := gitwork.Open(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.UnpackBundle(ctx, back.Bytes()); err == nil {
		t.Fatal("UnpackBundle without the basis succeeded")
	}
	if _, err := bare.RevParse(ctx, commit); err == nil {
		t.Fatal("a refused bundle's commit is in the repository")
	}
	// A header naming a commit its pack does not hold.
	forged := bytes.Replace(back.Bytes(), []byte(commit), []byte(strings.Repeat("1", 40)), 2)
	if _, err := coord.UnpackBundle(ctx, forged); err == nil {
		t.Fatal("UnpackBundle of a bundle without its tip succeeded")
	}
}
