package permrule

import (
	"path"
	"regexp"
	"strings"
)

// command is a bash command split into the simple commands that run.
type command struct {
	// parts are the simple commands as written, whitespace collapsed.
	parts []string
	// opaque says the command holds something whose effect its text does
	// not show (see the package doc): no allow rule allows it.
	opaque bool
}

// splitCommand splits s on the shell's list and pipe operators outside
// quotes and notes what an allow rule cannot vouch for.
func splitCommand(s string) command {
	var c command
	var cur strings.Builder
	flush := func() {
		if p := collapse(cur.String()); p != "" {
			c.parts = append(c.parts, p)
		}
		cur.Reset()
	}
	var quote byte // ' or " while inside quotes
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			}
			cur.WriteByte(ch)
			continue
		case quote == '"':
			switch ch {
			case '"':
				quote = 0
			case '\\':
				cur.WriteByte(ch)
				if i+1 < len(s) {
					i++
					ch = s[i]
				}
			case '`':
				c.opaque = true
			case '$':
				if i+1 < len(s) && s[i+1] == '(' {
					c.opaque = true
				}
			}
			cur.WriteByte(ch)
			continue
		}
		switch ch {
		case '\'', '"':
			quote = ch
			cur.WriteByte(ch)
		case '\\':
			cur.WriteByte(ch)
			if i+1 < len(s) {
				i++
				if s[i] == '\n' {
					continue
				}
				cur.WriteByte(s[i])
			}
		case ';', '\n', '\r':
			flush()
		case '&':
			if i+1 < len(s) && s[i+1] == '&' {
				i++
			} else if i > 0 && (s[i-1] == '>' || s[i-1] == '<') {
				// >& or <&: a redirection, judged below with its word.
				cur.WriteByte(ch)
				continue
			}
			flush()
		case '|':
			if i+1 < len(s) && (s[i+1] == '|' || s[i+1] == '&') {
				i++
			}
			flush()
		case '`', '(', ')', '{', '}':
			c.opaque = true
			cur.WriteByte(ch)
		case '$':
			if i+1 < len(s) && s[i+1] == '(' {
				c.opaque = true
			}
			cur.WriteByte(ch)
		case '<', '>':
			if !safeRedirect(s, i) {
				c.opaque = true
			}
			cur.WriteByte(ch)
		default:
			cur.WriteByte(ch)
		}
	}
	if quote != 0 {
		c.opaque = true
	}
	flush()
	for _, p := range c.parts {
		if stripWrappers(p) != p || leadingAssignment(p) {
			c.opaque = true
		}
	}
	return c
}

// safeRedirect says whether the redirection at s[i] only joins descriptors
// (2>&1, >&2) or discards to /dev/null, and so writes no file.
func safeRedirect(s string, i int) bool {
	if s[i] == '<' {
		return false
	}
	rest := strings.TrimPrefix(s[i+1:], ">")
	if strings.HasPrefix(rest, "&") {
		rest = rest[1:]
		return len(rest) > 0 && rest[0] >= '0' && rest[0] <= '9' && (len(rest) == 1 || !isWordByte(rest[1]))
	}
	rest = strings.TrimLeft(rest, " \t")
	return strings.HasPrefix(rest, "/dev/null") && (len(rest) == len("/dev/null") || !isWordByte(rest[len("/dev/null")]))
}

func isWordByte(b byte) bool {
	return b != ' ' && b != '\t' && b != ';' && b != '&' && b != '|' && b != '\n' && b != ')'
}

// collapse trims s and turns every run of blanks into one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func leadingAssignment(p string) bool {
	first, _, _ := strings.Cut(p, " ")
	return assignment.MatchString(first)
}

// wrappers run the command that follows them.
var wrappers = map[string]bool{"env": true, "command": true, "builtin": true, "exec": true, "nohup": true, "time": true, "nice": true, "sudo": true, "doas": true}

// stripWrappers is p as it runs: without leading assignments, wrappers and
// their options, a leading backslash, and the program's directory.
func stripWrappers(p string) string {
	words := strings.Fields(p)
	for len(words) > 0 {
		w := words[0]
		switch {
		case assignment.MatchString(w):
			words = words[1:]
		case wrappers[strings.TrimPrefix(w, `\`)]:
			words = words[1:]
			for len(words) > 0 && strings.HasPrefix(words[0], "-") {
				words = words[1:]
			}
		default:
			w = strings.Trim(strings.TrimPrefix(w, `\`), `'"`)
			if strings.Contains(w, "/") {
				w = path.Base(w)
			}
			words[0] = w
			return strings.Join(words, " ")
		}
	}
	return ""
}

// matchCommand reports whether one simple command matches a Bash rule's
// pattern: "git status:*" (the words git status, then anything), a
// pattern with * wildcards ("git status *" also matches "git status"
// alone), or the exact command.
func matchCommand(pattern, cmd string) bool {
	pattern = collapse(pattern)
	if p, ok := strings.CutSuffix(pattern, ":*"); ok {
		p = collapse(p)
		return cmd == p || strings.HasPrefix(cmd, p+" ")
	}
	if !strings.Contains(pattern, "*") {
		return cmd == pattern
	}
	if p, ok := strings.CutSuffix(pattern, " *"); ok && !strings.Contains(p, "*") && cmd == p {
		return true
	}
	var re strings.Builder
	re.WriteString("^")
	for i, piece := range strings.Split(pattern, "*") {
		if i > 0 {
			re.WriteString("(?s:.*)")
		}
		re.WriteString(regexp.QuoteMeta(piece))
	}
	re.WriteString("$")
	ok, err := regexp.MatchString(re.String(), cmd)
	return err == nil && ok
}
