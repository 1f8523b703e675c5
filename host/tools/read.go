package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/weavehq/weave/internal/safefile"
	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolRead, func(_ context.Context, t *Tools, c call) (plugins.ToolResult, error) { return t.read(c.args) })
}

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
	if fi, err := os.Stat(real); err == nil && fi.IsDir() {
		return failf("read %s: it is a directory; use glob to list its files", rel)
	}
	// Opening never blocks: a named pipe or a device is refused, not read.
	f, err := safefile.Open(real)
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
