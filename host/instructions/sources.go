package instructions

import "path/filepath"

// DefaultFiles are the instruction file names looked for in a directory,
// the first found winning: Weave's and Codex's AGENTS.md, then Claude
// Code's CLAUDE.md.
var DefaultFiles = []string{"AGENTS.md", "CLAUDE.md"}

// Sources says where the files are.
type Sources struct {
	// Project is the project root; "" reads no project files.
	Project string
	// UserDir is the user's Weave config directory ($XDG_CONFIG_HOME/weave);
	// "" reads none there.
	UserDir string
	// Home is the user's home directory, for ~/.claude; "" reads none there.
	Home string
	// Files are the instruction file names, first found wins per
	// directory; nil means DefaultFiles, an empty list none.
	Files []string
}

// place is one directory searched, and whether it is the project's.
type place struct {
	dir string
	// root is the project root the files must stay inside, "" for the
	// user's own directories.
	root string
}

// places are the directories holding sub (skills, commands), most
// preferred first: the project's .weave/ and .claude/, then the user's
// Weave directory and ~/.claude.
func (s Sources) places(sub string) []place {
	var out []place
	if s.Project != "" {
		out = append(out, place{filepath.Join(s.Project, ".weave", sub), s.Project}, place{filepath.Join(s.Project, ".claude", sub), s.Project})
	}
	if s.UserDir != "" {
		out = append(out, place{dir: filepath.Join(s.UserDir, sub)})
	}
	if s.Home != "" {
		out = append(out, place{dir: filepath.Join(s.Home, ".claude", sub)})
	}
	return out
}

func (s Sources) files() []string {
	if s.Files == nil {
		return DefaultFiles
	}
	return s.Files
}
