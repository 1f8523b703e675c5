package host

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/weavehq/weave/internal/atomicfile"
	"github.com/weavehq/weave/plugins"
)

// Limits of the listing tools.
const (
	maxGlobResults = 1000
	maxGrepMatches = 500
	maxGrepLine    = 500     // bytes of one matching line shown
	maxGrepFile    = 8 << 20 // larger files are skipped
	sniffBytes     = 8000    // a NUL byte in these marks a binary file
)

func isBinary(head []byte) bool { return bytes.IndexByte(head, 0) >= 0 }

func (t *Tools) read(args map[string]any) (plugins.ToolResult, error) {
	real, rel, err := t.pathOf(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	offset, _, err := intArg(args, argOffset)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	limit, hasLimit, err := intArg(args, argLimit)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if offset < 0 || (hasLimit && limit <= 0) {
		return failf("read %s: offset must be 1 or more and limit positive (got offset %d, limit %d)", rel, offset, limit)
	}
	if offset == 0 {
		offset = 1
	}
	f, err := os.Open(real)
	if errors.Is(err, fs.ErrNotExist) {
		return failf("read %s: no such file; use glob to find the right path", rel)
	}
	if err != nil {
		return failf("read %s: %v", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return failf("read %s: %v", rel, err)
	}
	if fi.IsDir() {
		return failf("read %s: it is a directory; use glob to list its files", rel)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniffBytes)
	if isBinary(head) {
		return failf("read %s: it is a binary file (%d bytes); read only shows text", rel, fi.Size())
	}
	if fi.Size() == 0 {
		return ok("%s is empty", rel)
	}
	maxBytes := t.limits.Read.MaxBytes
	var out strings.Builder
	line, shown, cut := 0, 0, false
	for {
		// Lines are read with a bound, so one huge line (minified code, a
		// log without newlines) cannot take the host's memory.
		text, rerr := readLine(br, maxBytes+1)
		if text == "" && rerr != nil {
			break
		}
		line++
		if line >= offset && (!hasLimit || shown < limit) {
			entry := fmt.Sprintf("%6d\t%s", line, strings.TrimRight(text, "\r\n"))
			if out.Len()+len(entry)+1 > maxBytes {
				if shown == 0 {
					// A single line longer than the cap: show its start.
					out.WriteString(strings.ToValidUTF8(entry[:max(maxBytes-1, 0)], ""))
					out.WriteByte('\n')
					shown++
				}
				cut = true
				break
			}
			out.WriteString(entry)
			out.WriteByte('\n')
			shown++
		}
		if rerr != nil || (hasLimit && shown >= limit) {
			break
		}
	}
	if shown == 0 && !cut {
		return failf("read %s: the file has %d lines; offset %d is past its end", rel, line, offset)
	}
	if cut {
		fmt.Fprintf(&out, "[cut: %s is %d bytes, more than tools.read.max_bytes (%d) shows at once; lines %d-%d shown; read on with offset %d]\n",
			rel, fi.Size(), maxBytes, offset, offset+shown-1, offset+shown)
	}
	return plugins.ToolResult{Output: out.String()}, nil
}

// readLine reads one line with its newline, keeping at most keep bytes of
// it and discarding the rest of the line.
func readLine(br *bufio.Reader, keep int) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if room := keep - len(b); room > 0 {
			b = append(b, chunk[:min(room, len(chunk))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return string(b), err
	}
}

func (t *Tools) write(args map[string]any) (plugins.ToolResult, error) {
	real, rel, err := t.pathOf(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	v, present := args[argContent]
	content, isString := v.(string)
	if !present || !isString {
		return failf("write %s: argument %q must be a string with the whole file's text (got %s)", rel, argContent, jsonType(v))
	}
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(real); err == nil {
		if fi.IsDir() {
			return failf("write %s: it is a directory; name a file", rel)
		}
		perm = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return failf("write %s: create its directory: %v", rel, err)
	}
	if err := atomicfile.WriteFile(real, []byte(content), perm); err != nil {
		return failf("write %s: %v", rel, err)
	}
	return ok("wrote %d bytes to %s", len(content), rel)
}

func (t *Tools) edit(args map[string]any) (plugins.ToolResult, error) {
	real, rel, err := t.pathOf(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	oldS, err := stringArg(args, argOldString, true)
	if err != nil {
		return failf("edit %s: %v; to create a file or replace all of it, use write", rel, err)
	}
	newS, err := stringArg(args, argNewString, false)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if _, present := args[argNewString]; !present {
		return failf("edit %s: missing argument %q (use \"\" to delete the old text)", rel, argNewString)
	}
	all, err := boolArg(args, argReplaceAll)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if oldS == newS {
		return failf("edit %s: old_string and new_string are the same; nothing to change", rel)
	}
	fi, err := os.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return failf("edit %s: no such file; use write to create it", rel)
	}
	if err != nil {
		return failf("edit %s: %v", rel, err)
	}
	if fi.IsDir() {
		return failf("edit %s: it is a directory; name a file", rel)
	}
	src, err := os.ReadFile(real)
	if err != nil {
		return failf("edit %s: %v", rel, err)
	}
	n := strings.Count(string(src), oldS)
	switch {
	case n == 0:
		return failf("edit %s: old_string was not found; read the file again and copy the text exactly, whitespace and indentation included (without read's line-number prefix)", rel)
	case n > 1 && !all:
		return failf("edit %s: old_string occurs %d times; include more surrounding lines to make it unique, or set replace_all: true to replace every occurrence", rel, n)
	}
	var out string
	if all {
		out = strings.ReplaceAll(string(src), oldS, newS)
	} else {
		out = strings.Replace(string(src), oldS, newS, 1)
	}
	if err := atomicfile.WriteFile(real, []byte(out), fi.Mode().Perm()); err != nil {
		return failf("edit %s: %v", rel, err)
	}
	if n == 1 {
		return ok("replaced 1 occurrence in %s", rel)
	}
	return ok("replaced %d occurrences in %s", n, rel)
}

// dirArg resolves the optional path argument of glob and grep (default:
// the project root).
func (t *Tools) dirArg(args map[string]any) (real, rel string, err error) {
	p, err := stringArg(args, argPath, false)
	if err != nil {
		return "", "", err
	}
	if p == "" {
		return t.root, ".", nil
	}
	return t.resolve(p)
}

func (t *Tools) glob(ctx context.Context, args map[string]any) (plugins.ToolResult, error) {
	pattern, err := stringArg(args, argPattern, true)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	pattern = filepath.ToSlash(pattern)
	if strings.HasPrefix(pattern, "/") || slices.Contains(strings.Split(pattern, "/"), "..") {
		return failf("glob %q: the pattern must be relative and must not contain \"..\"; use path to search from another directory of the project", pattern)
	}
	if !doublestar.ValidatePattern(pattern) {
		return failf("glob %q: not a valid pattern (see https://github.com/bmatcuk/doublestar#patterns: *, **, ?, [abc], {a,b})", pattern)
	}
	dir, dirRel, err := t.dirArg(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return failf("glob: path %s is not a directory", dirRel)
	}
	var found []string
	more := false
	err = doublestar.GlobWalk(os.DirFS(dir), pattern, func(p string, d fs.DirEntry) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if slices.Contains(strings.Split(p, "/"), ".git") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if len(found) == maxGlobResults {
			more = true
			return fs.SkipAll
		}
		found = append(found, projectRel(t.root, filepath.Join(dir, filepath.FromSlash(p))))
		return nil
	}, doublestar.WithFilesOnly(), doublestar.WithNoFollow())
	if err != nil && !errors.Is(err, fs.SkipAll) {
		if ctx.Err() != nil {
			return plugins.ToolResult{}, ctx.Err()
		}
		return failf("glob %q: %v", pattern, err)
	}
	if len(found) == 0 {
		return ok("no files match %q under %s", pattern, dirRel)
	}
	slices.Sort(found)
	out := strings.Join(found, "\n") + "\n"
	if more {
		out += fmt.Sprintf("[only the first %d matches are shown; narrow the pattern or the path]\n", maxGlobResults)
	}
	return ok("%s", out)
}

func (t *Tools) grep(ctx context.Context, args map[string]any) (plugins.ToolResult, error) {
	pattern, err := stringArg(args, argPattern, true)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return failf("grep: %q is not a valid regular expression (RE2 syntax: no lookaround or backreferences): %v", pattern, err)
	}
	fileGlob, err := stringArg(args, argGlob, false)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if fileGlob != "" && !doublestar.ValidatePattern(fileGlob) {
		return failf("grep: glob %q is not a valid pattern", fileGlob)
	}
	start, startRel, err := t.dirArg(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if _, err := os.Stat(start); err != nil {
		return failf("grep: path %s does not exist", startRel)
	}
	var lines []string
	more := false
	matchName := func(p string) bool {
		if fileGlob == "" {
			return true
		}
		rel, _ := filepath.Rel(start, p)
		rel = filepath.ToSlash(rel)
		if !strings.Contains(fileGlob, "/") {
			rel = filepath.Base(p)
		}
		m, _ := doublestar.Match(fileGlob, rel)
		return m
	}
	err = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return nil // unreadable entries are skipped, as grep -s does
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		// Symlinks are skipped: one may point outside the project.
		if !d.Type().IsRegular() || !matchName(p) {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > maxGrepFile {
			return nil
		}
		stop, err := grepFile(p, projectRel(t.root, p), re, &lines)
		if err != nil {
			return nil
		}
		if stop {
			more = true
			return fs.SkipAll
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.SkipAll) {
		if ctx.Err() != nil {
			return plugins.ToolResult{}, ctx.Err()
		}
		return failf("grep: %v", err)
	}
	if len(lines) == 0 {
		return ok("no matches for %q under %s", pattern, startRel)
	}
	out := strings.Join(lines, "\n") + "\n"
	if more {
		out += fmt.Sprintf("[only the first %d matches are shown; narrow the pattern, path or glob]\n", maxGrepMatches)
	}
	return ok("%s", out)
}

// grepFile appends the matching lines of one file; stop reports that the
// match limit was reached with more to come.
func grepFile(path, rel string, re *regexp.Regexp, lines *[]string) (stop bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(sniffBytes); isBinary(head) {
		return false, nil
	}
	n := 0
	for {
		text, rerr := br.ReadString('\n')
		if text == "" && rerr != nil {
			if rerr == io.EOF {
				return false, nil
			}
			return false, rerr
		}
		n++
		text = strings.TrimRight(text, "\r\n")
		if re.MatchString(text) {
			if len(*lines) == maxGrepMatches {
				return true, nil
			}
			if len(text) > maxGrepLine {
				text = text[:maxGrepLine] + " [line cut]"
			}
			*lines = append(*lines, fmt.Sprintf("%s:%d:%s", rel, n, text))
		}
		if rerr != nil {
			return false, nil
		}
	}
}
