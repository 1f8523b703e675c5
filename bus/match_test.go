package bus

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, topic string
		want           bool
	}{
		// exact
		{"agent:w-1", "agent:w-1", true},
		{"agent:w-1", "agent:w-10", false},
		{"agent:w-1", "agent:w-", false},
		{"agent:W-1", "agent:w-1", false},
		{"loop:current", "loop:current:old", false},
		// prefix: no wildcard, ends in : - . / _
		{"inbound:chat-", "inbound:chat-1", true},
		{"inbound:chat-", "inbound:chat-", true},
		{"inbound:chat-", "inbound:chat", false},
		{"inbound:", "inbound:x:y", true},
		{"thread.t1.", "thread.t1.reply", true},
		{"a/", "a/b/c", true},
		{"run_", "run_1", true},
		{"run_", "Run_1", false},
		// globs
		{"*", "", true},
		{"*", "agent:a:b/c", true},
		{"inbound:*", "inbound:", true},
		{"inbound:*", "inbound:a:b", true},
		{"inbound:*", "outbound:a", false},
		{"*:done", "agent:w:done", true},
		{"*:done", "agent:w:done:x", false},
		{"a*b*c", "aXXbYYbZc", true},
		{"a*b*c", "aXXbYYbZ", false},
		{"a*a*a*b", strings.Repeat("a", 200), false},
		{"**", "x:y", true},
		{"task:?", "task:7", true},
		{"task:?", "task:", false},
		{"task:?", "task:77", false},
		{"task:?", "task:é", true},
		{"task:[0-9]", "task:5", true},
		{"task:[0-9]", "task:a", false},
		{"task:[!0-9]", "task:a", true},
		{"task:[^0-9]", "task:5", false},
		{"task:[abc]x", "task:bx", true},
		{"task:[]]", "task:]", true},
		{"task:[!]]", "task:]", false},
		{"task:[a-]", "task:-", true},
		{`lit:\*`, "lit:*", true},
		{`lit:\*`, "lit:x", false},
		{`lit:\[x`, "lit:[x", true},
		// invalid patterns match nothing
		{"", "", false},
		{"task:[0-9", "task:5", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.topic); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.topic, got, tt.want)
		}
	}
}

func TestValidatePattern(t *testing.T) {
	tests := []struct {
		pattern string
		ok      bool
	}{
		{"agent:*", true},
		{"inbound:chat-", true},
		{"task:[0-9]", true},
		{`a\*`, true},
		{"", false},
		{"a:[0-9", false},
		{`a\`, false},
		{"a b", false},
		{"a\tb", false},
		{"a\x00", false},
		{"\xff", false},
		{strings.Repeat("a", MaxTopicLen+1), false},
	}
	for _, tt := range tests {
		err := ValidatePattern(tt.pattern)
		if (err == nil) != tt.ok {
			t.Errorf("ValidatePattern(%.20q) = %v, want ok=%v", tt.pattern, err, tt.ok)
		}
	}
}

func TestValidateTopic(t *testing.T) {
	tests := []struct {
		topic string
		ok    bool
	}{
		{"agent:w-1", true},
		{"thread.t1.reply", true},
		{"system:dead-letter", true},
		{"", false},
		{"agent:*", false},
		{"agent:?", false},
		{"agent:[x]", false},
		{"a b", false},
	}
	for _, tt := range tests {
		err := ValidateTopic(tt.topic)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateTopic(%q) = %v, want ok=%v", tt.topic, err, tt.ok)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	for _, bb := range []struct{ name, pattern, topic string }{
		{"exact", "agent:tapestry", "agent:tapestry"},
		{"prefix", "inbound:chat-", "inbound:chat-12345"},
		{"glob", "agent:*:done", "agent:tapestry:task:7:done"},
	} {
		p, err := compilePattern(bb.pattern)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				p.match(bb.topic)
			}
		})
	}
}
