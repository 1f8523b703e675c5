package instructions

import (
	"errors"
	"fmt"
	"io/fs"

	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Command is a slash command from a file: its body, arguments put in, is
// the prompt the person sends.
type Command struct {
	// Name is the command's full name: the file's name without .md, its
	// subfolders before it joined by ":" (frontend/test.md is
	// frontend:test). Short is the file's name alone (test), which calls it
	// too when no other command has it.
	Name, Short string
	// Namespace says where it came from as Claude Code shows it: project,
	// user, project:frontend.
	Namespace    string
	Description  string
	ArgumentHint string
	// AllowedTools narrows the tools of the turn it starts, in Claude
	// Code's spelling (Bash(git status:*), Read) or Weave's (bash, read);
	// nil narrows nothing.
	AllowedTools []string
	// Model names the model of the turn; "" keeps the agent's.
	Model string
	// Path is the file, Shown as a person reads it.
	Path, Shown string
	body        string
}

var commandPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Commands finds the command files of every place (.md files, subfolders
// namespacing them), the first of a full name winning. A file that cannot
// be read or whose front matter is malformed is skipped with a warning
// naming it.
func (s Sources) Commands() (cmds []Command, warnings []string) {
	for _, pl := range s.places("commands") {
		who := "user"
		if pl.root != "" {
			who = "project"
		}
		err := filepath.WalkDir(pl.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == pl.dir && errors.Is(err, fs.ErrNotExist) {
					return fs.SkipDir
				}
				warnings = append(warnings, fmt.Sprintf("commands in %s not read: %v", shownPath(s.Project, path), err))
				return nil
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".md") {
				return nil
			}
			rel, _ := filepath.Rel(pl.dir, path)
			parts := strings.Split(strings.TrimSuffix(filepath.ToSlash(rel), ".md"), "/")
			shown := shownPath(s.Project, path)
			for _, p := range parts {
				if !commandPart.MatchString(p) {
					warnings = append(warnings, fmt.Sprintf("command %s skipped: %q cannot be part of a command name (letters, digits, ., _ and -)", shown, p))
					return nil
				}
			}
			c := Command{Name: strings.Join(parts, ":"), Short: parts[len(parts)-1], Namespace: who, Path: path, Shown: shown}
			if len(parts) > 1 {
				c.Namespace += ":" + strings.Join(parts[:len(parts)-1], ":")
			}
			if slices.ContainsFunc(cmds, func(o Command) bool { return o.Name == c.Name }) {
				return nil
			}
			if err := c.read(pl.root); err != nil {
				warnings = append(warnings, fmt.Sprintf("command %s skipped: %v", shown, err))
				return nil
			}
			cmds = append(cmds, c)
			return nil
		})
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("commands in %s not read: %v", shownPath(s.Project, pl.dir), err))
		}
	}
	return cmds, warnings
}

func (c *Command) read(root string) error {
	text, cut, err := readCapped(root, c.Path)
	if err != nil {
		return err
	}
	if cut {
		return fmt.Errorf("it is longer than %d bytes", MaxBytes)
	}
	fm, body, err := splitFrontMatter(text)
	if err != nil {
		return err
	}
	c.Description = fm["description"]
	c.ArgumentHint = fm["argument-hint"]
	c.Model = fm["model"]
	if at, ok := fm["allowed-tools"]; ok {
		c.AllowedTools = splitTools(at)
		if len(c.AllowedTools) == 0 {
			return errors.New("allowed-tools names no tool")
		}
	}
	c.body = strings.TrimSpace(body)
	if c.Description == "" {
		// Claude Code shows the body's first line when there is no
		// description.
		first, _, _ := strings.Cut(c.body, "\n")
		c.Description = strings.TrimSpace(strings.TrimLeft(first, "# "))
	}
	return nil
}

// splitTools splits an allowed-tools value at commas and spaces outside
// parentheses: "Bash(git add:*), Bash(git status:*) Read" is three tools.
func splitTools(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
	}
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case (r == ',' || r == ' ') && depth == 0:
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

// Resolve finds the command name calls: a full name, else a short name
// that one command alone has. An ambiguous short name is an error that
// names the full ones.
func Resolve(cmds []Command, name string) (Command, bool, error) {
	if i := slices.IndexFunc(cmds, func(c Command) bool { return c.Name == name }); i >= 0 {
		return cmds[i], true, nil
	}
	var found []Command
	for _, c := range cmds {
		if c.Short == name {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return Command{}, false, nil
	case 1:
		return found[0], true, nil
	}
	names := make([]string, len(found))
	for i, c := range found {
		names[i] = "/" + c.Name
	}
	return Command{}, false, fmt.Errorf("/%s is more than one command: %s", name, strings.Join(names, ", "))
}

// positional matches $1 to $9.
var positional = regexp.MustCompile(`\$[1-9]`)

// Expand is the prompt the command sends with args: $ARGUMENTS is args as
// given, $1 to $9 its words (quotes group words). A body that uses neither
// gets the arguments after it, as Claude Code does.
func (c Command) Expand(args string) string {
	args = strings.TrimSpace(args)
	words := splitWords(args)
	used := strings.Contains(c.body, "$ARGUMENTS") || positional.MatchString(c.body)
	out := strings.ReplaceAll(c.body, "$ARGUMENTS", args)
	out = positional.ReplaceAllStringFunc(out, func(m string) string {
		i := int(m[1] - '1')
		if i < len(words) {
			return words[i]
		}
		return ""
	})
	if !used && args != "" {
		out += "\n\nARGUMENTS: " + args
	}
	return out
}

// splitWords splits s at blanks; "..." and '...' keep blanks in a word.
func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote, in = r, true
		case quote == 0 && (r == ' ' || r == '\t' || r == '\n'):
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// ParseCall splits a line "/name args" into the name and the arguments;
// ok is false when the line is not a slash command.
func ParseCall(line string) (name, args string, ok bool) {
	line = strings.TrimSpace(line)
	rest, found := strings.CutPrefix(line, "/")
	if !found || rest == "" {
		return "", "", false
	}
	name, args = rest, ""
	if i := strings.IndexAny(rest, " \t\n"); i >= 0 {
		name, args = rest[:i], rest[i+1:]
	}
	if strings.ContainsAny(name, "/\\") {
		return "", "", false // a path, not a command
	}
	return name, strings.TrimSpace(args), true
}
