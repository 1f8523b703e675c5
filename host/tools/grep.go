package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/weavehq/weave/internal/safefile"
	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolGrep, func(ctx context.Context, t *Tools, c call) (plugins.ToolResult, error) { return t.grep(ctx, c.args) })
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
	f, err := safefile.Open(path)
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
