// Package textcap bounds text that comes from outside weave (a plugin's block
// reason, a command's error output) before it is stored or logged, so that
// one call cannot grow state.json or weave.log without limit.
package textcap

import (
	"strconv"
	"unicode/utf8"
)

// Cap returns s when it is at most limit bytes, else its first bytes, cut on
// a character boundary, followed by a note of how much was left out, all in
// at most limit bytes (limit is raised to 64 to leave room for the note).
// Capping capped text changes nothing.
func Cap(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	limit = max(limit, 64)
	// The note's length depends on the count it gives; the count is at
	// least len(s)-limit, so its digits are known up to one.
	cut := limit - len(note(len(s)-limit+40))
	// Back up to the start of a character, at most utf8.UTFMax-1 bytes, so
	// that cutting never makes valid text invalid.
	for i := 0; i < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	return s[:cut] + note(len(s)-cut)
}

func note(n int) string { return " … (" + strconv.Itoa(n) + " more bytes cut)" }
