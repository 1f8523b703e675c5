package instructions

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// frontMatter is a file's front matter, each value as text: a list is its
// items joined by ", ".
type frontMatter map[string]string

// simpleLine is a line of front matter written as Claude Code's docs write
// it: key: value, the value taken as it stands (so that
// "argument-hint: [pr-number] [priority]" is text, not broken YAML).
var simpleLine = regexp.MustCompile(`^([A-Za-z0-9_-]+):(?:\s+(.*))?$`)

// splitFrontMatter returns the front matter and the body of a file. A file
// that does not start with "---" has none; one that opens it and never
// closes it, or whose front matter is neither key: value lines nor a YAML
// mapping, is an error.
func splitFrontMatter(text string) (frontMatter, string, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t\r") != "---" {
		return frontMatter{}, text, nil
	}
	var lines []string
	for {
		line, more, found := strings.Cut(rest, "\n")
		if strings.TrimRight(line, " \t\r") == "---" {
			fm, err := parseFrontMatter(lines)
			return fm, more, err
		}
		if !found {
			return nil, "", errors.New("the front matter opened with --- is never closed with ---")
		}
		lines = append(lines, strings.TrimRight(line, "\r"))
		rest = more
	}
}

func parseFrontMatter(lines []string) (frontMatter, error) {
	fm := frontMatter{}
	simple := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		m := simpleLine.FindStringSubmatch(l)
		if m == nil || m[2] == "" || strings.HasPrefix(m[2], "|") || strings.HasPrefix(m[2], ">") {
			simple = false
			break
		}
		fm[m[1]] = unquote(strings.TrimSpace(m[2]))
	}
	if simple {
		return fm, nil
	}
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &raw); err != nil {
		return nil, fmt.Errorf("the front matter is not key: value lines nor YAML: %w", err)
	}
	fm = frontMatter{}
	for k, v := range raw {
		switch v := v.(type) {
		case nil:
		case []any:
			items := make([]string, 0, len(v))
			for _, it := range v {
				items = append(items, fmt.Sprint(it))
			}
			fm[k] = strings.Join(items, ", ")
		case map[string]any:
			return nil, fmt.Errorf("front matter key %s: want text or a list, got a mapping", k)
		default:
			fm[k] = strings.TrimSpace(fmt.Sprint(v))
		}
	}
	return fm, nil
}

// unquote removes one pair of matching quotes around s.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
