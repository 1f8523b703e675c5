package textcap

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCap(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{strings.Repeat("a", 64), 64, strings.Repeat("a", 64)},
		{strings.Repeat("a", 100), 64, strings.Repeat("a", 40) + " … (60 more bytes cut)"},
		{strings.Repeat("a", 39) + "é" + strings.Repeat("a", 60), 64, strings.Repeat("a", 39) + " … (62 more bytes cut)"},
	}
	for _, tc := range tests {
		got := Cap(tc.in, tc.limit)
		if got != tc.want {
			t.Errorf("Cap(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
		if len(got) > max(tc.limit, 64) {
			t.Errorf("Cap(%q, %d) is %d bytes, over the limit", tc.in, tc.limit, len(got))
		}
	}
	for _, n := range []int{4097, 1 << 20} {
		big := strings.Repeat("é", n)
		got := Cap(big, 4096)
		if len(got) > 4096 || !utf8.ValidString(got) {
			t.Errorf("Cap(%d runes, 4096) = %d bytes, valid UTF-8 %v; want at most 4096 bytes and valid", n, len(got), utf8.ValidString(got))
		}
		if again := Cap(got, 4096); again != got {
			t.Errorf("Cap(Cap(s)) changed the text: %q -> %q", got[len(got)-40:], again[len(again)-40:])
		}
	}
}

func TestHeadTail(t *testing.T) {
	if got := HeadTail("short", 300, "output"); got != "short" {
		t.Errorf("HeadTail(short) = %q", got)
	}
	for _, s := range []string{
		"BEGIN" + strings.Repeat("a", 10000) + "END",
		"BEGIN" + strings.Repeat("é", 5000) + "END",
		"BEGIN" + strings.Repeat("日", 1<<20) + "END",
	} {
		for _, limit := range []int{1, 256, 1000, 4096} {
			got := HeadTail(s, limit, "output")
			if len(got) > max(limit, 256) || !utf8.ValidString(got) {
				t.Errorf("HeadTail(%d bytes, %d) = %d bytes, valid %v; want at most the limit, valid UTF-8", len(s), limit, len(got), utf8.ValidString(got))
			}
			if !strings.HasPrefix(got, "BEGIN") || !strings.HasSuffix(got, "END") || !strings.Contains(got, "bytes cut from the middle of this output of "+strconv.Itoa(len(s))+" bytes") {
				t.Errorf("HeadTail(%d bytes, %d) = %q..%q; want the start, the end and a note", len(s), limit, got[:20], got[len(got)-20:])
			}
		}
	}
}
