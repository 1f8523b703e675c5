package instructions

import (
	"fmt"
	"path/filepath"
	"strings"
)

// File is one instruction file as read.
type File struct {
	// Path is where it was read; Shown is how a person and the model see
	// it (relative to the project when inside it).
	Path, Shown string
	// Text is its content, with a note at the end when it was cut.
	Text string
	// User marks the user's own file, which applies to every project.
	User bool
}

// Find returns the instruction file of dir: the first of names that is
// there, "" when none is.
func Find(dir string, names []string) (string, error) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		ok, err := isFile(p)
		if err != nil {
			return "", err
		}
		if ok {
			return p, nil
		}
	}
	return "", nil
}

// Instructions reads the user's instruction file, then the project root's:
// the ones every agent gets in its first request. A file that cannot be
// read (a project file that leads out of the project, say) is left out
// with a warning that names it.
func (s Sources) Instructions() (out []File, warnings []string) {
	for _, pl := range []place{{dir: s.UserDir}, {dir: s.Project, root: s.Project}} {
		if pl.dir == "" {
			continue
		}
		p, err := Find(pl.dir, s.files())
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("instructions not read: %v", err))
			continue
		}
		if p == "" {
			continue
		}
		text, cut, err := readCapped(pl.root, p)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("instructions %s not read: %v", shownPath(s.Project, p), err))
			continue
		}
		f := File{Path: p, Shown: shownPath(s.Project, p), Text: text, User: pl.root == ""}
		if cut {
			f.Text += cutNote(f.Shown)
		}
		out = append(out, f)
	}
	return out, warnings
}

// Render is the instruction files as a part of a system prompt; "" when
// there are none.
func Render(files []File) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Instructions\n\nFollow these instructions; the project's apply to work in it, the user's everywhere.\n")
	for _, f := range files {
		whose := "the project root"
		if f.User {
			whose = "the user"
		}
		fmt.Fprintf(&b, "\n## %s (from %s)\n\n%s\n", f.Shown, whose, strings.TrimRight(f.Text, "\n"))
	}
	return b.String()
}
