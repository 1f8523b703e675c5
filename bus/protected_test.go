package bus_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus"
)

// The patterns of issue 23 (but \*, which matches only the topic "*" that
// nobody can publish) and their kin: each is spelled away from hook:,
// agent: or system:, and each matches topics there.
var escapedProtected = []string{
	`\hook:*`, `h\ook:*`, `\agent:*`, `\a\gent:tapestry`, `\system:*`, `h?ok:*`,
	`hoo\k\:*`, `\h\o\o\k\:\t`, `[h]ook:*`, `[!a-g]ook:*`, `[^x]ook:*`, `?ook:*`, `h*`,
	`*:*`, `*k:x`, `[a-z]*`, `\hook\:`, `*`, `**`, `?*`, `hook:`, `hook:x`, `agent:`,
	`[\h]ook:x`, `[g-i]ook:x`, `system\:dead-letter`, `sys*`, `s[x-z]s*`,
}

func TestPatternMayMatchProtected(t *testing.T) {
	for _, p := range escapedProtected {
		if !bus.PatternMayMatchProtected(p) {
			t.Errorf("PatternMayMatchProtected(%q) = false, want true", p)
		}
	}
	for _, p := range []string{
		"inbound:*", "outbound:", "hooks-report", "agentless:*", "agent.*.replies",
		"thread.*.broadcast", "issue:*", `\i\s\s\u\e:*`, `\*`, `\?`, "[!h]ook:*", "hook", "agent",
		"[a-g]ook:*", `\hook`, "session:*", "loop:current", "model:*", "hoo[!k]:*", "x*",
	} {
		if bus.PatternMayMatchProtected(p) {
			t.Errorf("PatternMayMatchProtected(%q) = true, want false", p)
		}
	}
	// Fail closed: a pattern the matcher refuses is protected.
	for _, p := range []string{"", `hook:\`, "[hook:*", "a b"} {
		if !bus.PatternMayMatchProtected(p) {
			t.Errorf("PatternMayMatchProtected(%q) = false for an invalid pattern, want true", p)
		}
	}
}

// checkUnprotected fails when a pattern PatternMayMatchProtected lets a
// peer without the token hold matches a protected topic, with the real
// matcher: the topic itself, and each protected prefix followed by it.
func checkUnprotected(t *testing.T, pattern, topic string) {
	t.Helper()
	if bus.PatternMayMatchProtected(pattern) {
		return
	}
	topics := []string{topic}
	for _, p := range bus.ProtectedPrefixes() {
		topics = append(topics, p+topic)
	}
	for _, tp := range topics {
		if bus.ProtectedTopic(tp) && bus.Match(pattern, tp) {
			t.Fatalf("PatternMayMatchProtected(%q) = false, but Match(%q, %q) = true on a protected topic", pattern, pattern, tp)
		}
	}
}

// FuzzPatternMayMatchProtected draws patterns and topics and checks, with
// the real matcher, that no pattern accepted without the token matches a
// protected topic.
func FuzzPatternMayMatchProtected(f *testing.F) {
	for _, p := range escapedProtected {
		f.Add(p, "tool.execute.before")
	}
	for _, s := range []struct{ p, t string }{
		{"inbound:*", "x"}, {`\i\n*`, "hook:x"}, {"[!h]ook:*", "hook:x"}, {"h?ok:*", "agent:x"},
		{"*[é]*", "hook:é"}, {`\é*`, "é"}, {"?*", "ü"}, {"[]-]*", "]"}, {"[!]]ook:*", "hook:"},
	} {
		f.Add(s.p, s.t)
	}
	f.Fuzz(checkUnprotected)
}

// TestPatternMayMatchProtectedRandom runs the fuzz check on patterns and
// topics drawn from the characters that matter (the protected prefixes'
// letters and the pattern syntax), so every go test run tries a few
// thousand.
func TestPatternMayMatchProtectedRandom(t *testing.T) {
	const alphabet = `hokagentsym:*?[]\!^-x.`
	r := rand.New(rand.NewPCG(23, 1))
	draw := func(n int) string {
		var b strings.Builder
		for range 1 + r.IntN(n) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	open := 0
	for range 20000 {
		p := draw(10)
		if bus.ValidatePattern(p) != nil {
			continue
		}
		if !bus.PatternMayMatchProtected(p) {
			open++
		}
		for range 8 {
			checkUnprotected(t, p, draw(6))
		}
	}
	if open == 0 {
		t.Fatalf("no drawn pattern was free of protected topics: the draw tests nothing")
	}
}
