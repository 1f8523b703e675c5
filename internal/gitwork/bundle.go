package gitwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
//
// The bundle is git's own format (v2), its header written here and its
// pack by one git pack-objects: a coordinator and its workers make one
// per task, and one git command costs less than the four that git bundle
// create needs for a commit no ref names. Its one prerequisite is basis,
// which the receiver must hold; the pack has every object reachable from
// tip and not from basis, whole (no deltas against what it leaves out).
func (r *Repo) Bundle(ctx context.Context, w io.Writer, tip, basis string) error {
	sha, err := r.commitID(ctx, tip)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", tip, err)
	}
	revs := sha + "\n"
	header := "# v2 git bundle\n"
	if basis != "" {
		b, err := r.commitID(ctx, basis)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", tip, err)
		}
		if b == sha {
			return fmt.Errorf("bundle %s: it is its basis %s; nothing to send", short(sha), short(b))
		}
		revs += "^" + b + "\n"
		header += "-" + b + " basis\n"
	}
	header += sha + " " + bundleRefs + sha + "\n\n"
	// The pack is read whole before anything is written: w never holds
	// half a bundle.
	pack, err := run(ctx, r.Root, []byte(revs), "pack-objects", "--stdout", "--revs", "--delta-base-offset", "-q")
	if err != nil {
		return fmt.Errorf("bundle %s: %w", short(sha), err)
	}
	if _, err := io.WriteString(w, header+pack); err != nil {
		return fmt.Errorf("bundle %s: write it: %w", short(sha), err)
	}
	return nil
}

// commitID is rev's full commit name: rev itself when it is one already
// (the commit's presence is then checked by whoever reads it), else
// resolved by git.
func (r *Repo) commitID(ctx context.Context, rev string) (string, error) {
	if len(rev) == 40 && strings.Trim(rev, "0123456789abcdef") == "" {
		return rev, nil
	}
	return r.RevParse(ctx, rev)
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
	data, err := io.ReadAll(src)
	if err != nil {
		return "", fmt.Errorf("fetch a bundle: read it: %w", err)
	}
	// The header is read here rather than by git bundle list-heads: one git
	// command less for every task. git reads it again as it fetches.
	sha, err := bundleHead(data)
	if err != nil {
		return "", fmt.Errorf("fetch a bundle: %w: %v", ErrBadBundle, err)
	}
	f, err := os.CreateTemp("", "weave-bundle-*")
	if err != nil {
		return "", fmt.Errorf("fetch a bundle: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return "", fmt.Errorf("fetch a bundle: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("fetch a bundle: %w", err)
	}
	if _, err := run(ctx, r.Root, nil, "fetch", "-q", "--no-tags", "--no-write-fetch-head", f.Name(), "+"+bundleRefs+sha+":"+ref); err != nil {
		return "", fmt.Errorf("fetch bundle of %s into %s: %w", short(sha), ref, err)
	}
	// The ref's loose file, which the fetch just wrote, says where it
	// points without a process; git is asked when it cannot tell.
	if r.looseRef(ctx, ref) == sha {
		return sha, nil
	}
	got, err := r.RevParse(ctx, ref)
	if err != nil || got != sha {
		return "", fmt.Errorf("fetch bundle of %s into %s: the ref points at %s", short(sha), ref, short(got))
	}
	return sha, nil
}

// bundleHead reads the header of a v2 bundle and returns the commit of its
// one ref, which must be refs/weave/bundles/<commit>.
func bundleHead(data []byte) (string, error) {
	const sig = "# v2 git bundle\n"
	if !bytes.HasPrefix(data, []byte(sig)) {
		return "", errors.New("not a v2 git bundle")
	}
	rest := data[len(sig):]
	var heads []string
	for {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return "", errors.New("its header does not end")
		}
		rest = after
		if len(line) == 0 {
			break
		}
		if line[0] == '-' {
			continue // a prerequisite: git checks the repository has it
		}
		heads = append(heads, string(line))
		if len(heads) > 1 {
			return "", fmt.Errorf("it names more than one ref")
		}
	}
	if len(heads) != 1 {
		return "", errors.New("it names no ref")
	}
	sha, name, _ := strings.Cut(heads[0], " ")
	if len(sha) != 40 || strings.Trim(sha, "0123456789abcdef") != "" || name != bundleRefs+sha {
		return "", fmt.Errorf("it names %q, want one %s<commit>", heads[0], bundleRefs)
	}
	return sha, nil
}
