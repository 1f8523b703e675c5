// Package textcap bounds text that comes from outside weave (a plugin's block
// reason, a command's error output, a tool's result) before it is stored,
// logged or sent on, so that one call cannot grow state.json, weave.log, a
// session transcript or a plugin's message without limit. Cap keeps the
// head; HeadTail keeps the head and the tail, where a command's output says
// how it ended. Both cut on character boundaries and say how much they cut.
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

// HeadTail returns s when it is at most limit bytes, else its first and last
// bytes with a note between them saying how many bytes of the middle were
// cut, all in at most limit bytes (limit is raised to 256 to leave room for
// the note). what names the text in the note ("output", "answer").
func HeadTail(s string, limit int, what string) string {
	if len(s) <= limit {
		return s
	}
	limit = max(limit, 256)
	// As in Cap: the note's digits are known up to one.
	keep := limit - len(middleNote(len(s)-limit+40, len(s), what))
	head, tail := keep/2, keep-keep/2
	for i := 0; i < utf8.UTFMax-1 && head > 0 && !utf8.RuneStart(s[head]); i++ {
		head--
	}
	from := len(s) - tail
	for i := 0; i < utf8.UTFMax-1 && from < len(s) && !utf8.RuneStart(s[from]); i++ {
		from++
	}
	return s[:head] + middleNote(from-head, len(s), what) + s[from:]
}

func middleNote(cut, total int, what string) string {
	return "\n[… " + strconv.Itoa(cut) + " bytes cut from the middle of this " + what + " of " + strconv.Itoa(total) + " bytes; its start and end are kept …]\n"
}
