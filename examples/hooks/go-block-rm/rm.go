package main

import (
	"path"
	"strings"
)

// finding is a destructive rm found in a command line.
type finding struct {
	// Command is the offending simple command, re-joined from its words.
	Command string
	// Target says what it would delete, for the reason shown to the agent.
	Target string
}

// findDangerousRm reports the first simple command in the shell command line
// that is a recursive rm of a target too broad to be intended. It
// understands enough of the shell for the commands agents write: quotes,
// backslashes, the separators ; & && | || and newlines, subshells and
// command substitution, env assignments and wrappers (sudo, env, nohup, ...)
// before the command, flags in any order and combination, `--`, and
// `sh -c '...'` bodies. It is a guard, not a shell: a determined caller can
// hide a command (eval, variables), so it aims at the mistakes an agent
// makes, not at an adversary.
func findDangerousRm(line string) (finding, bool) {
	for _, words := range simpleCommands(line) {
		words = stripPrefixes(words)
		if len(words) == 0 {
			continue
		}
		switch path.Base(words[0]) {
		case "rm":
			if target, ok := dangerousRmArgs(words[1:]); ok {
				return finding{Command: strings.Join(words, " "), Target: target}, true
			}
		case "sh", "bash", "zsh", "dash", "ksh":
			// sh -c 'rm -rf /': judge the body too.
			for i := 1; i+1 < len(words); i++ {
				if strings.HasPrefix(words[i], "-") && !strings.HasPrefix(words[i], "--") && strings.Contains(words[i], "c") {
					if f, ok := findDangerousRm(words[i+1]); ok {
						return f, true
					}
					break
				}
			}
		}
	}
	return finding{}, false
}

// wrappers are commands that run the rest of their words as a command.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "env": true, "command": true, "exec": true,
	"nohup": true, "time": true, "nice": true, "ionice": true, "xargs": true,
	"builtin": true,
}

// keywords may start a simple command without being the command.
var keywords = map[string]bool{
	"!": true, "{": true, "}": true, "then": true, "do": true, "else": true,
	"if": true, "elif": true, "while": true, "until": true,
}

// stripPrefixes drops what comes before the real command: keywords,
// VAR=value assignments, and wrappers with their options (sudo -u root,
// nice -n 5, env -i).
func stripPrefixes(words []string) []string {
	for len(words) > 0 {
		w := words[0]
		switch {
		case keywords[w]:
			words = words[1:]
		case isAssignment(w):
			words = words[1:]
		case wrappers[path.Base(w)]:
			words = words[1:]
			for len(words) > 0 && strings.HasPrefix(words[0], "-") {
				opt := words[0]
				words = words[1:]
				// Options of sudo, nice and ionice that take a value.
				if len(words) > 0 && (opt == "-u" || opt == "-g" || opt == "-n" || opt == "-c" || opt == "-C" || opt == "-h" || opt == "-p") {
					words = words[1:]
				}
			}
		default:
			return words
		}
	}
	return words
}

func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j, r := range w[:i] {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || j > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// dangerousRmArgs reads rm's arguments and returns the first dangerous
// target of a recursive delete.
func dangerousRmArgs(args []string) (string, bool) {
	recursive, noPreserveRoot := false, false
	var operands []string
args:
	for i, a := range args {
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			break args
		case a == "--recursive":
			recursive = true
		case a == "--no-preserve-root":
			noPreserveRoot = true
		case strings.HasPrefix(a, "--"):
			// --force, --verbose, --interactive=never, ...
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if strings.ContainsAny(a[1:], "rR") {
				recursive = true
			}
		default:
			operands = append(operands, a)
		}
	}
	if !recursive {
		return "", false
	}
	for _, op := range operands {
		if what, ok := dangerousTarget(op); ok {
			return what, true
		}
	}
	if noPreserveRoot {
		return "with --no-preserve-root, which only matters when deleting /", true
	}
	return "", false
}

// systemDirs are top-level directories whose recursive deletion ruins a
// machine.
var systemDirs = map[string]bool{
	"/bin": true, "/boot": true, "/dev": true, "/etc": true, "/home": true,
	"/lib": true, "/lib64": true, "/opt": true, "/proc": true, "/root": true,
	"/sbin": true, "/srv": true, "/sys": true, "/usr": true, "/var": true,
	"/Users": true, "/System": true, "/Library": true, "/Applications": true,
}

// dangerousTarget says what op would delete if it is too broad.
func dangerousTarget(op string) (string, bool) {
	// The home directory, however it is spelled.
	for _, home := range []string{"~", "$HOME", "${HOME}"} {
		if op == home || strings.HasPrefix(op, home+"/") {
			rest := strings.Trim(strings.TrimPrefix(op, home), "/")
			if rest == "" || rest == "*" || rest == ".*" || rest == "." {
				return "the home directory", true
			}
		}
	}
	if strings.HasPrefix(op, "/") {
		clean := path.Clean(op)
		switch {
		case clean == "/" || clean == "/*" || clean == "/.*":
			return "the whole filesystem", true
		case systemDirs[clean] || systemDirs[strings.TrimSuffix(clean, "/*")]:
			return "the system directory " + strings.TrimSuffix(clean, "/*"), true
		}
		return "", false
	}
	switch path.Clean(op) {
	case "*", ".*", ".", "..", "../*", "../.*":
		return "everything in the working directory (" + op + ")", true
	}
	return "", false
}

// simpleCommands splits a shell command line into simple commands, each a
// list of words with quotes and backslashes removed. Command substitutions,
// subshells and backquotes are split out as commands of their own.
func simpleCommands(line string) [][]string {
	var (
		cmds   [][]string
		words  []string
		word   strings.Builder
		inWord bool
	)
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
			words = nil
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch c {
		case ' ', '\t':
			endWord()
		case '\n', ';', '&', '|', '(', ')', '`':
			endCommand()
		case '$':
			if i+1 < len(line) && line[i+1] == '(' {
				endCommand() // $( starts a command of its own
				i++
				continue
			}
			word.WriteByte(c)
			inWord = true
		case '\\':
			inWord = true
			if i+1 < len(line) {
				i++
				if line[i] != '\n' {
					word.WriteByte(line[i])
				}
			}
		case '\'':
			inWord = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			word.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case '"':
			inWord = true
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				word.WriteByte(line[i])
			}
		case '#':
			if !inWord {
				// A comment runs to the end of the line.
				for i < len(line) && line[i] != '\n' {
					i++
				}
				endCommand()
				continue
			}
			word.WriteByte(c)
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endCommand()
	return cmds
}
