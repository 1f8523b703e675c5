package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// cellWidth is how many terminal cells s takes: wide characters (CJK,
// emoji) take two, escape sequences none.
func cellWidth(s string) int { return ansi.StringWidth(s) }

// clip shortens s to n cells so that a long line never wraps the panel.
func clip(s string, n int) string {
	if n <= 0 || cellWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}

// padRight pads s with spaces to n cells.
func padRight(s string, n int) string {
	if w := cellWidth(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

// colorModes are the values of --color.
var colorModes = []string{"auto", "always", "never"}

// useColor decides whether output is coloured: --color=always or never
// win; auto colours a terminal unless NO_COLOR is set (https://no-color.org)
// or TERM is dumb, and CLICOLOR_FORCE forces it.
func useColor(mode string, terminal bool, getenv func(string) string) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		if getenv("NO_COLOR") != "" {
			return false, nil
		}
		if f := getenv("CLICOLOR_FORCE"); f != "" && f != "0" {
			return true, nil
		}
		return terminal && getenv("TERM") != "dumb", nil
	}
	return false, usageErrorf("--color %q: want one of %s", mode, strings.Join(colorModes, ", "))
}

// palette holds the styles weave prints with; without colour every style
// renders its text unchanged.
type palette struct {
	ok, bad, warn, dim, bold lipgloss.Style
}

func newPalette(color bool) palette {
	r := lipgloss.NewRenderer(os.Stdout)
	if color {
		r.SetColorProfile(termenv.ANSI)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return palette{
		ok:   r.NewStyle().Foreground(lipgloss.Color("2")),
		bad:  r.NewStyle().Foreground(lipgloss.Color("1")),
		warn: r.NewStyle().Foreground(lipgloss.Color("3")),
		dim:  r.NewStyle().Faint(true),
		bold: r.NewStyle().Bold(true),
	}
}

// state colours a plan's state word.
func (p palette) state(s string) string {
	switch {
	case s == "running" || s == "complete" || s == "done":
		return p.ok.Render(s)
	case s == "paused" || s == "active" || strings.HasPrefix(s, "paused"):
		return p.warn.Render(s)
	case s == "failed":
		return p.bad.Render(s)
	}
	return s
}

// warning prints a warning line to w.
func (p palette) warning(w interface{ Write([]byte) (int, error) }, msg string) {
	fmt.Fprintf(w, "%s %s\n", p.warn.Render("warning:"), msg)
}
