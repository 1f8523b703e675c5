package textcap

import (
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
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456789 … (3 more bytes cut)"},
		{"ab" + "é" + "cd", 3, "ab … (4 more bytes cut)"},
	}
	for _, tc := range tests {
		if got := Cap(tc.in, tc.limit); got != tc.want {
			t.Errorf("Cap(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
	big := strings.Repeat("é", 1<<20)
	got := Cap(big, 4097)
	if len(got) > 4097+40 || !utf8.ValidString(got) {
		t.Errorf("Cap(2 MiB, 4097) = %d bytes, valid UTF-8 %v; want at most %d bytes and valid", len(got), utf8.ValidString(got), 4097+40)
	}
}
