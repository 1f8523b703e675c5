package gitwork

import (
	"bytes"
	"context"
	"encoding/binary"
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
//
// The bundle is git's own format (v2), its header written here and its
// pack by one git pack-objects, or here when it is a few loose commits
// over basis: a coordinator and its workers make one per task, and one
// git command costs less than the four that git bundle create needs for
// a commit no ref names. Its one prerequisite is basis,
// which the receiver must hold; the pack has every object reachable from
// tip and not from basis, whole (no deltas against what it leaves out).
func (r *Repo) Bundle(ctx context.Context, w io.Writer, tip, basis string) error {
	sha, err := r.commitID(ctx, tip)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", tip, err)
	}
	revs := sha + "\n"
	header := "# v2 git bundle\n"
	var b string
	if basis != "" {
		b, err = r.commitID(ctx, basis)
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
	// The pack is made whole before anything is written: w never holds
	// half a bundle. A few commits of loose objects over a basis are
	// packed without git (packloose.go).
	var pack string
	if p, ok := r.packLoose(ctx, sha, b); ok {
		pack = string(p)
	} else if pack, err = run(ctx, r.Root, []byte(revs), "pack-objects", "--stdout", "--revs", "--delta-base-offset", "-q"); err != nil {
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
// Fetching runs no hook and checks every object git receives
// (UnpackBundle).
func (r *Repo) FetchBundle(ctx context.Context, src io.Reader, ref string) (string, error) {
	if !strings.HasPrefix(ref, "refs/") {
		return "", fmt.Errorf("fetch a bundle into %q: not a full ref name (refs/...)", ref)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return "", fmt.Errorf("fetch a bundle: read it: %w", err)
	}
	sha, err := r.unpack(ctx, data)
	if err != nil {
		return "", err
	}
	// git update-ref refuses a commit the repository has not got.
	if _, err := run(ctx, r.Root, nil, "update-ref", "-m", "weave: bundle", ref, sha); err != nil {
		return "", fmt.Errorf("fetch bundle of %s into %s: %w", short(sha), ref, err)
	}
	return sha, nil
}

// UnpackBundle writes the objects of a bundle written by Bundle into r
// and returns its tip, which r then holds; no ref moves. Every object is
// checked as it is written (git's --strict: well formed, and every object
// it names is in the bundle or already in r, the bundle's basis and its
// history included; a bundle whose basis r lacks is refused), and no hook
// runs.
//
// Where git fetch takes three processes (the fetch, its unpacking and its
// walk of what it got) and a temporary file, this is one process fed the
// pack on its standard input, and none for a few whole commits, trees and
// blobs over objects the repository holds loose, which are checked and
// written here (unpackloose.go): a coordinator and its workers unpack a
// bundle or two for every task.
func (r *Repo) UnpackBundle(ctx context.Context, data []byte) (string, error) {
	sha, err := r.unpack(ctx, data)
	if err != nil {
		return "", err
	}
	if !r.hasObject(ctx, sha) {
		if _, err := run(ctx, r.Root, nil, "cat-file", "-e", sha+"^{commit}"); err != nil {
			return "", fmt.Errorf("unpack bundle of %s: the bundle does not hold its tip: %w", short(sha), err)
		}
	}
	return sha, nil
}

// unpackLimit is git's own (transfer.unpackLimit): a pack of fewer
// objects is written as loose objects, a larger one kept as a pack.
const unpackLimit = 100

// unpack writes the pack of the bundle data into r, checked (--strict),
// and returns the tip its header names.
func (r *Repo) unpack(ctx context.Context, data []byte) (string, error) {
	// The header is read here rather than by git bundle list-heads: one git
	// command less for every task.
	sha, pack, err := bundleHead(data)
	if err != nil {
		return "", fmt.Errorf("fetch a bundle: %w: %v", ErrBadBundle, err)
	}
	if len(pack) < 12 || string(pack[:4]) != "PACK" {
		return "", fmt.Errorf("fetch a bundle: %w: no pack after its header", ErrBadBundle)
	}
	// A few whole objects are written here (unpackloose.go), checked as
	// git checks them; anything else is git's.
	if r.unpackLoose(ctx, pack) {
		return sha, nil
	}
	args := []string{"unpack-objects", "-q", "--strict"}
	if binary.BigEndian.Uint32(pack[8:12]) > unpackLimit {
		args = []string{"index-pack", "--stdin", "--strict"}
	}
	if _, err := run(ctx, r.Root, pack, args...); err != nil {
		return "", fmt.Errorf("fetch bundle of %s: %w", short(sha), err)
	}
	return sha, nil
}

// hasObject reports whether r holds sha as git's own files say: a loose
// object, or one in a pack read here (packstore.go).
func (r *Repo) hasObject(ctx context.Context, sha string) bool {
	common, err := r.commonDir(ctx)
	if err != nil || !isHex(sha) {
		return false
	}
	if _, err = os.Stat(filepath.Join(common, "objects", sha[:2], sha[2:])); err == nil {
		return true
	}
	_, _, ok := r.findPacked(ctx, sha)
	return ok
}

// bundleHead reads the header of a v2 bundle and returns the commit of its
// one ref, which must be refs/weave/bundles/<commit>, and the pack that
// follows.
func bundleHead(data []byte) (string, []byte, error) {
	const sig = "# v2 git bundle\n"
	if !bytes.HasPrefix(data, []byte(sig)) {
		return "", nil, errors.New("not a v2 git bundle")
	}
	rest := data[len(sig):]
	var heads []string
	for {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return "", nil, errors.New("its header does not end")
		}
		rest = after
		if len(line) == 0 {
			break
		}
		if line[0] == '-' {
			continue // a prerequisite: git --strict checks the repository has it
		}
		heads = append(heads, string(line))
		if len(heads) > 1 {
			return "", nil, fmt.Errorf("it names more than one ref")
		}
	}
	if len(heads) != 1 {
		return "", nil, errors.New("it names no ref")
	}
	sha, name, _ := strings.Cut(heads[0], " ")
	if len(sha) != 40 || strings.Trim(sha, "0123456789abcdef") != "" || name != bundleRefs+sha {
		return "", nil, fmt.Errorf("it names %q, want one %s<commit>", heads[0], bundleRefs)
	}
	return sha, rest, nil
}
