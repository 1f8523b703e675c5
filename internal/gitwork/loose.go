package gitwork

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A loose object is a file git writes once and never changes:
// objects/<2 hex>/<rest>, the zlib of "<type> <size>\x00<body>", named
// after the hash of that. An object not loose is looked for in the packs
// (packstore.go), where a small bundle unpacked (UnpackBundle) leaves its
// objects, and a coordinator reads each task's commit right after: read
// here and checked against its name, it costs no process. An object
// stored as a delta or in a large pack, or a file that is not exactly what
// git writes, says "cannot tell" and the caller asks git.

// maxLooseCommit bounds the commit objects read from their files; a
// larger one is git's to read.
const maxLooseCommit = 1 << 20

// looseObject is the type and body of object sha as its loose file holds
// them; ok is false when there is no such file or it is not what git
// writes for sha.
func (r *Repo) looseObject(ctx context.Context, sha string) (typ string, body []byte, ok bool) {
	return r.looseObjectMax(ctx, sha, maxLooseCommit)
}

// looseObjectMax is looseObject for an object of at most max bytes; a
// larger one says "cannot tell".
func (r *Repo) looseObjectMax(ctx context.Context, sha string, max int) (typ string, body []byte, ok bool) {
	if !isHex(sha) {
		return "", nil, false
	}
	common, err := r.commonDir(ctx)
	if err != nil {
		return "", nil, false
	}
	f, err := os.Open(filepath.Join(common, "objects", sha[:2], sha[2:]))
	if os.IsNotExist(err) && len(sha) == 2*sha1.Size {
		return r.packedObject(ctx, sha, max) // packstore.go
	}
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return "", nil, false
	}
	defer z.Close()
	raw, err := io.ReadAll(io.LimitReader(z, int64(max)+64))
	if err != nil || len(raw) > max+64 {
		return "", nil, false
	}
	var h hash.Hash = sha1.New()
	if len(sha) == 64 {
		h = sha256.New()
	}
	h.Write(raw)
	if hex.EncodeToString(h.Sum(nil)) != sha {
		return "", nil, false
	}
	head, body, found := bytes.Cut(raw, []byte{0})
	typ, size, _ := strings.Cut(string(head), " ")
	if n, err := strconv.Atoi(size); !found || err != nil || n != len(body) || n > max {
		return "", nil, false
	}
	return typ, body, true
}

// CommitInfo is what a task's commit says of itself: its parents and its
// trailers (the last value of each key).
type CommitInfo struct {
	Parents  []string
	Trailers map[string]string
}

// ReadCommit reads commit's parents and trailers: from its loose file when
// its message is plain (a subject, then one paragraph of "Key: value"
// lines, as Message writes it), where git's reading and this one cannot
// differ; else as git log reads them.
func (r *Repo) ReadCommit(ctx context.Context, commit string) (CommitInfo, error) {
	if typ, body, ok := r.looseObject(ctx, commit); ok && typ == "commit" {
		c := parseCommit(string(body))
		if tr, ok := plainTrailers(c.message); ok {
			return CommitInfo{Parents: c.parents, Trailers: tr}, nil
		}
	}
	out, err := run(ctx, r.Root, nil, "log", "-1", "--no-walk", "--format=%H%x00%P%x00%(trailers:only,unfold)", commit, "--")
	if err != nil {
		return CommitInfo{}, fmt.Errorf("read %s: %w", short(commit), err)
	}
	p := strings.SplitN(strings.TrimLeft(out, "\n"), "\x00", 3)
	if len(p) < 3 || p[0] != commit {
		return CommitInfo{}, fmt.Errorf("read %s: it is no commit", short(commit))
	}
	info := CommitInfo{Parents: strings.Fields(p[1]), Trailers: map[string]string{}}
	for _, line := range strings.Split(p[2], "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			info.Trailers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return info, nil
}

// parseCommit reads a commit object's body: its tree, parents, author
// and message.
func parseCommit(body string) commitObject {
	head, msg, _ := strings.Cut(body, "\n\n")
	c := commitObject{message: msg}
	for _, line := range strings.Split(head, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "tree":
			if c.tree == "" {
				c.tree = v
			}
		case "parent":
			c.parents = append(c.parents, v)
		case "author":
			c.author = v
		}
	}
	return c
}

// plainTrailers reads the trailers of a message shaped as Message writes
// it: a first paragraph, a blank line, and a last paragraph of "Key:
// value" lines and nothing else, ending in one newline. Anything git's
// trailer reading treats apart (comment lines, a "---" divider, an old
// "Conflicts:" block, continuation lines, carriage returns) makes ok false.
func plainTrailers(msg string) (map[string]string, bool) {
	if !strings.HasSuffix(msg, "\n") || strings.HasSuffix(msg, "\n\n") || strings.ContainsAny(msg, "\r\x00") {
		return nil, false
	}
	for _, line := range strings.Split(msg, "\n") {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "---") || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "Conflicts:") {
			return nil, false
		}
	}
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 || strings.TrimSpace(msg[:i]) == "" {
		return nil, false
	}
	tr := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(msg[i+2:], "\n"), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || !trailerKey(k) || strings.TrimSpace(v) == "" || v != strings.TrimSpace(v) {
			return nil, false
		}
		tr[k] = v
	}
	return tr, true
}

// trailerKey reports whether k is a key git reads as one: letters, digits
// and dashes, starting with no dash.
func trailerKey(k string) bool {
	if k == "" || k[0] == '-' {
		return false
	}
	for _, c := range k {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
