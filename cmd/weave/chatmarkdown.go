package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// markdownStream renders an answer's markdown for a terminal as it
// streams, one completed block at a time: text is held until a blank line
// outside a code fence closes the blocks before it, which are then
// rendered and printed; the end of the answer renders what is left. A
// block is never re-rendered, so nothing printed has to be taken back.
type markdownStream struct {
	out io.Writer
	r   *glamour.TermRenderer
	// pending is the streamed text not yet rendered.
	pending strings.Builder
	// printed says a block of this answer is on the screen, so the next
	// one is set off by a blank line.
	printed bool
}

// newMarkdownStream renders for a terminal width columns wide (0: 80).
// The style is GLAMOUR_STYLE when set (a standard style name such as
// dark, light, notty), else dark: glamour's automatic choice asks the
// terminal for its background, which would read the person's input.
func newMarkdownStream(out io.Writer, width int, getenv func(string) string) (*markdownStream, error) {
	if width <= 0 {
		width = 80
	}
	width = min(width, 120)
	style := getenv("GLAMOUR_STYLE")
	if style == "" || style == "auto" {
		style = "dark"
	}
	profile := termenv.ANSI256
	if ct := getenv("COLORTERM"); ct == "truecolor" || ct == "24bit" {
		profile = termenv.TrueColor
	}
	var styleOpt glamour.TermRendererOption
	if _, err := os.Stat(style); err == nil {
		styleOpt = glamour.WithStylePath(style)
	} else {
		styleOpt = glamour.WithStandardStyle(style)
	}
	r, err := glamour.NewTermRenderer(styleOpt, glamour.WithWordWrap(width-4), glamour.WithColorProfile(profile))
	if err != nil {
		return nil, fmt.Errorf("markdown style %q (GLAMOUR_STYLE): %w", style, err)
	}
	return &markdownStream{out: out, r: r}, nil
}

// write takes a delta of the answer and prints the blocks it completes.
func (m *markdownStream) write(text string) {
	m.pending.WriteString(text)
	s := m.pending.String()
	if cut := blocksEnd(s); cut > 0 {
		m.pending.Reset()
		m.pending.WriteString(s[cut:])
		m.render(s[:cut])
	}
}

// flush prints what is left of the answer; the next answer starts afresh.
func (m *markdownStream) flush() {
	s := m.pending.String()
	m.pending.Reset()
	m.render(s)
	m.printed = false
}

func (m *markdownStream) render(md string) {
	if strings.TrimSpace(md) == "" {
		return
	}
	out, err := m.r.Render(md)
	if err != nil {
		// The text is still worth more than the error.
		out = md
	}
	lines := strings.Split(out, "\n")
	blank := func(l string) bool { return strings.TrimSpace(ansi.Strip(l)) == "" }
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return
	}
	if m.printed {
		fmt.Fprintln(m.out)
	}
	for i, l := range lines {
		lines[i] = trimPadding(l)
	}
	fmt.Fprintln(m.out, strings.Join(lines, "\n"))
	m.printed = true
}

// blocksEnd is where the complete blocks of s end: just past the last
// blank line outside a fenced code block, or 0 when no block is complete.
func blocksEnd(s string) int {
	end, pos := 0, 0
	var fence string
	for {
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			return end
		}
		line := s[pos : pos+nl]
		pos += nl + 1
		t := strings.TrimLeft(line, " ")
		indent := len(line) - len(t)
		switch {
		case fence != "":
			if indent < 4 && strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" \t") == "" {
				fence = ""
			}
		case indent < 4 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			n := len(t) - len(strings.TrimLeft(t, t[:1]))
			fence = t[:n]
		case strings.TrimSpace(line) == "":
			end = pos
		}
	}
}

// trimPadding drops the spaces, styled or not, that glamour pads a line
// to the width with: they only wrap lines when the terminal narrows.
func trimPadding(l string) string {
	trimmed := false
	for {
		if t := strings.TrimSuffix(l, " "); t != l {
			l, trimmed = t, true
			continue
		}
		if i := strings.LastIndex(l, "\x1b["); i >= 0 && strings.HasSuffix(l, "m") && strings.Trim(l[i+2:len(l)-1], "0123456789;") == "" {
			l, trimmed = l[:i], true
			continue
		}
		if trimmed && strings.Contains(l, "\x1b[") {
			l += "\x1b[0m"
		}
		return l
	}
}
