package docrun

import (
	"strings"
)

// Block is one fenced code block of a markdown page.
type Block struct {
	// Line is the 1-based line of its opening fence.
	Line int
	// Info is the fence's info string, trimmed ("sh run").
	Info string
	// Text is the block's content, each line without the fence's
	// indentation, ending in a newline when not empty.
	Text string
}

// Runnable reports whether the block is marked to be run by the tests.
func (b Block) Runnable() bool {
	f := strings.Fields(b.Info)
	return len(f) == 2 && f[0] == "sh" && f[1] == "run"
}

// Blocks returns the top-level fenced code blocks of a markdown page, in
// order. A fence opens with three or more backticks or tildes and closes
// with at least as many of the same character and nothing else, as
// CommonMark says; fences between them are content. An unclosed block runs
// to the end of the page.
func Blocks(page string) []Block {
	var blocks []Block
	var cur *Block
	var fence, indent string
	var text strings.Builder
	for i, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if cur == nil {
			f := fenceOf(trimmed)
			if f == "" {
				continue
			}
			cur = &Block{Line: i + 1, Info: strings.TrimSpace(trimmed[len(f):])}
			fence, indent = f, line[:len(line)-len(trimmed)]
			text.Reset()
			continue
		}
		if f := fenceOf(trimmed); f != "" && f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(trimmed) == f {
			cur.Text = text.String()
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		text.WriteString(strings.TrimPrefix(line, indent))
		text.WriteByte('\n')
	}
	if cur != nil {
		cur.Text = text.String()
		blocks = append(blocks, *cur)
	}
	return blocks
}

// fenceOf returns the run of three or more backticks or tildes a line
// starts with, or "".
func fenceOf(line string) string {
	if line == "" || line[0] != '`' && line[0] != '~' {
		return ""
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	if n < 3 || line[0] == '`' && strings.Contains(line[n:], "`") {
		return ""
	}
	return line[:n]
}
