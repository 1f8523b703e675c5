package gitwork

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// bundleRefs is where Bundle names a commit while it writes it: a bundle
// carries refs, never bare commits.
const bundleRefs = "refs/weave/bundles/"

// Bundle writes to w a git bundle holding the commits reachable from tip
// and not from basis, or tip's whole history when basis is "". The bundle
// names tip by one ref, refs/weave/bundles/<commit>, which FetchBundle
// reads back. tip and basis are any revisions; basis must be an ancestor
// of tip and differ from it (a bundle cannot be empty).
func (r *Repo) Bundle(ctx context.Context, w io.Writer, tip, basis string) error {
	sha, err := r.RevParse(ctx, tip)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", tip, err)
	}
	rng := bundleRefs + sha
	if basis != "" {
		b, err := r.RevParse(ctx, basis)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", tip, err)
		}
		if b == sha {
			return fmt.Errorf("bundle %s: it is its basis %s; nothing to send", short(sha), short(b))
		}
		rng = b + ".." + rng
	}
	// The ref lives only while git writes the bundle; two bundles of one
	// commit name the same ref with the same value, so they do not race.
	if _, err := run(ctx, r.Root, nil, "update-ref", bundleRefs+sha, sha); err != nil {
		return fmt.Errorf("bundle %s: %w", short(sha), err)
	}
	defer func() { _, _ = run(context.WithoutCancel(ctx), r.Root, nil, "update-ref", "-d", bundleRefs+sha) }()
	// git writes a bundle to a file; a temporary one keeps the writer free
	// of git's half-written output when it fails.
	dir, err := os.MkdirTemp("", "weave-bundle-*")
	if err != nil {
		return fmt.Errorf("bundle %s: %w", short(sha), err)
	}
	defer os.RemoveAll(dir)
	// git writes the file through a lock file it renames, so it is opened
	// only once git is done.
	name := filepath.Join(dir, "b.bundle")
	if _, err := run(ctx, r.Root, nil, "bundle", "create", "-q", name, rng); err != nil {
		return fmt.Errorf("bundle %s: %w", short(sha), err)
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", short(sha), err)
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("bundle %s: write it: %w", short(sha), err)
	}
	return nil
}

// ErrBadBundle says a bundle is not one Bundle wrote: not a bundle, or not
// naming exactly one commit.
var ErrBadBundle = errors.New("not a weave bundle")

// FetchBundle reads a bundle written by Bundle from src, fetches its
// commits into r and points ref (a full name, refs/...) at its tip,
// wherever ref was. It returns the tip. The repository must hold the
// bundle's basis already; otherwise git refuses, naming what is missing.
// Fetching runs no hook and checks every object git receives.
func (r *Repo) FetchBundle(ctx context.Context, src io.Reader, ref string) (string, error) {
	if !strings.HasPrefix(ref, "refs/") {
		return "", fmt.Errorf("fetch a bundle into %q: not a full ref name (refs/...)", ref)
	}
	f, err := os.CreateTemp("", "weave-bundle-*")
	if err != nil {
		return "", fmt.Errorf("fetch a bundle: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := io.Copy(f, src); err != nil {
		return "", fmt.Errorf("fetch a bundle: read it: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("fetch a bundle: %w", err)
	}
	out, err := run(ctx, r.Root, nil, "bundle", "list-heads", f.Name())
	if err != nil {
		return "", fmt.Errorf("fetch a bundle: %w: %v", ErrBadBundle, err)
	}
	heads := strings.Fields(out)
	if len(heads) != 2 || heads[1] != bundleRefs+heads[0] {
		return "", fmt.Errorf("fetch a bundle: %w: it names %q, want one %s<commit>", ErrBadBundle, strings.TrimSpace(out), bundleRefs)
	}
	sha := heads[0]
	if _, err := run(ctx, r.Root, nil, "fetch", "-q", "--no-tags", "--no-write-fetch-head", f.Name(), "+"+heads[1]+":"+ref); err != nil {
		return "", fmt.Errorf("fetch bundle of %s into %s: %w", short(sha), ref, err)
	}
	got, err := r.RevParse(ctx, ref)
	if err != nil || got != sha {
		return "", fmt.Errorf("fetch bundle of %s into %s: the ref points at %s", short(sha), ref, short(got))
	}
	return sha, nil
}
