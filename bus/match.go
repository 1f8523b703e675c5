package bus

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTopicLen bounds topics and patterns.
const MaxTopicLen = 1024

// prefixEnds are the last characters that make a pattern without wildcards a
// prefix pattern.
const prefixEnds = ":-./_"

// globMeta are the characters that make a pattern a glob.
const globMeta = `*?[\`

type patternKind uint8

const (
	kindExact patternKind = iota
	kindPrefix
	kindGlob
)

// pattern is a compiled topic pattern.
type pattern struct {
	raw  string
	kind patternKind
}

func compilePattern(p string) (pattern, error) {
	if err := ValidatePattern(p); err != nil {
		return pattern{}, err
	}
	return pattern{raw: p, kind: kindOf(p)}, nil
}

func kindOf(p string) patternKind {
	switch {
	case strings.ContainsAny(p, globMeta):
		return kindGlob
	case strings.IndexByte(prefixEnds, p[len(p)-1]) >= 0:
		return kindPrefix
	default:
		return kindExact
	}
}

func (p pattern) match(topic string) bool {
	switch p.kind {
	case kindExact:
		return p.raw == topic
	case kindPrefix:
		return strings.HasPrefix(topic, p.raw)
	default:
		return globMatch(p.raw, topic)
	}
}

// Match reports whether topic matches pattern under Weave's rules:
//   - a pattern with a wildcard is an fnmatch glob: * matches any run of
//     characters, ':' and '/' included; ? matches one character; [...] is a
//     class ([!...] or [^...] negated, a-z ranges); \ escapes the next
//     character. Matching is case-sensitive.
//   - a pattern without a wildcard that ends in ':', '-', '.', '/' or '_' is
//     a prefix: "inbound:chat-" matches "inbound:chat-1".
//   - any other pattern is exact: "agent:w-1" never matches "agent:w-10".
//
// An invalid pattern matches nothing.
func Match(pattern, topic string) bool {
	p, err := compilePattern(pattern)
	if err != nil {
		return false
	}
	return p.match(topic)
}

// ValidatePattern reports why p cannot be used as a topic pattern.
func ValidatePattern(p string) error {
	if err := validateName("pattern", p); err != nil {
		return err
	}
	if !strings.ContainsAny(p, globMeta) {
		return nil
	}
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 == len(p) {
				return fmt.Errorf("topic pattern %q ends with a lone backslash; escape it as \\\\", p)
			}
			i++
		case '[':
			end := classEnd(p, i)
			if end < 0 {
				return fmt.Errorf("topic pattern %q has an unclosed '['; close it or escape it as \\[", p)
			}
			i = end
		}
	}
	return nil
}

// ValidateTopic reports why t cannot be published to: it must be non-empty,
// printable, at most MaxTopicLen bytes and free of the wildcards * ? [.
func ValidateTopic(t string) error {
	if err := validateName("topic", t); err != nil {
		return err
	}
	if i := strings.IndexAny(t, "*?["); i >= 0 {
		return fmt.Errorf("topic %q contains the wildcard %q; wildcards belong in subscription patterns, not in topics", t, t[i])
	}
	return nil
}

func validateName(what, s string) error {
	if s == "" {
		return fmt.Errorf("empty %s; give a topic such as agent:tapestry", what)
	}
	if len(s) > MaxTopicLen {
		return fmt.Errorf("%s %.40q... is %d bytes, longer than the %d allowed", what, s, len(s), MaxTopicLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%s %q contains white space or a control character", what, s)
		}
	}
	return nil
}

// classEnd returns the index of the ']' closing the class that opens at
// p[i], or -1.
func classEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		j++
	}
	if j < len(p) && p[j] == ']' { // a leading ']' is literal
		j++
	}
	for ; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return -1
}

// globMatch matches name against the glob p, backtracking only to the last
// star, so it runs in O(len(p)*len(name)) at worst.
func globMatch(p, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, -1
	for px < len(p) || nx < len(name) {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if end, ok := matchClass(p, px, r); ok {
						px = end + 1
						nx += w
						continue
					}
				}
			case '\\':
				if px+1 < len(p) && nx < len(name) && name[nx] == p[px+1] {
					px += 2
					nx++
					continue
				}
			default:
				if nx < len(name) && name[nx] == c {
					px++
					nx++
					continue
				}
			}
		}
		if starPx >= 0 && starNx < len(name) {
			_, w := utf8.DecodeRuneInString(name[starNx:])
			starNx += w
			px, nx = starPx+1, starNx
			continue
		}
		return false
	}
	return true
}

// mayMatchPrefixed reports whether some topic that starts with prefix may
// match p. It walks the pattern over prefix the way the matcher would, with
// every choice a star gives (a set of states, not one), and answers yes as
// soon as one walk has consumed all of prefix: it does not try to prove that
// the rest of the pattern matches nothing, so a yes may be too careful but a
// no is exact. It costs O(len(p)*len(prefix)).
func (p pattern) mayMatchPrefixed(prefix string) bool {
	switch p.kind {
	case kindExact:
		return strings.HasPrefix(p.raw, prefix)
	case kindPrefix:
		return strings.HasPrefix(p.raw, prefix) || strings.HasPrefix(prefix, p.raw)
	}
	return globMayMatchPrefixed(p.raw, prefix)
}

// globMayMatchPrefixed is mayMatchPrefixed for a glob: a search over the
// states (px, nx), pattern position and bytes of prefix consumed, with the
// matcher's steps: * takes nothing or one rune and stays, ? and a class take
// one rune, an escape and a literal take one byte.
func globMayMatchPrefixed(p, prefix string) bool {
	if prefix == "" {
		return true
	}
	width := len(prefix) + 1
	seen := make([]bool, (len(p)+1)*width)
	stack := []int{0}
	push := func(px, nx int) {
		if i := px*width + nx; !seen[i] {
			seen[i] = true
			stack = append(stack, i)
		}
	}
	seen[0] = true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		px, nx := i/width, i%width
		if nx == len(prefix) {
			return true
		}
		if px == len(p) {
			continue
		}
		r, w := utf8.DecodeRuneInString(prefix[nx:])
		switch c := p[px]; c {
		case '*':
			push(px+1, nx)
			push(px, nx+w)
		case '?':
			push(px+1, nx+w)
		case '[':
			if end, ok := matchClass(p, px, r); ok {
				push(end+1, nx+w)
			}
		case '\\':
			if px+1 < len(p) && prefix[nx] == p[px+1] {
				push(px+2, nx+1)
			}
		default:
			if prefix[nx] == c {
				push(px+1, nx+1)
			}
		}
	}
	return false
}

// matchClass matches r against the class opening at p[i] and returns the
// index of its closing ']'.
func matchClass(p string, i int, r rune) (int, bool) {
	end := classEnd(p, i)
	if end < 0 {
		return 0, false
	}
	j := i + 1
	negate := false
	if p[j] == '!' || p[j] == '^' {
		negate = true
		j++
	}
	matched := false
	for j < end {
		lo, w := classChar(p, j)
		j += w
		hi := lo
		if j+1 < end && p[j] == '-' {
			hi, w = classChar(p, j+1)
			j += 1 + w
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return end, matched != negate
}

func classChar(p string, j int) (rune, int) {
	if p[j] == '\\' && j+1 < len(p) {
		r, w := utf8.DecodeRuneInString(p[j+1:])
		return r, w + 1
	}
	return utf8.DecodeRuneInString(p[j:])
}

// BroadcastPattern matches the broadcast topics of the collaboration
// primitives, thread.<id>.broadcast. A message on one reaches every
// matching subscription: identical patterns do not supersede each other
// there, so every bidder of a contract net hears the call for proposals.
const BroadcastPattern = "thread.*.broadcast"

// IsBroadcast reports whether topic is a broadcast topic (matches
// BroadcastPattern).
func IsBroadcast(topic string) bool {
	const pre, suf = "thread.", ".broadcast"
	return len(topic) >= len(pre)+len(suf) && strings.HasPrefix(topic, pre) && strings.HasSuffix(topic, suf)
}
