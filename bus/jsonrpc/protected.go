package jsonrpc

import (
	"strings"

	"github.com/weavehq/weave/bus"
)

// The protected topics are those whose traffic can change what a run does:
// hook decisions (hook:), agent requests and delegation (agent:) and the
// bus's own topics such as dead letters (system:), as the topic table says
// (bus.ProtectedPrefixes). On a server with a token, only peers that sent
// it may subscribe to them or send on them; other loopback peers keep every
// other topic.
//
// mayMatchProtected reports whether pattern could match a protected topic.
// It looks at the pattern's literal head (before its first wildcard): a
// pattern can only reach topics under a prefix P when its head and P agree
// as far as the shorter goes. "*", "h*" and "hook:x" can; "inbound:*"
// cannot.
func mayMatchProtected(pattern string) bool {
	head := pattern
	if i := strings.IndexAny(pattern, "*?["); i >= 0 {
		head = pattern[:i]
	} else if !isPrefixPattern(pattern) {
		return bus.ProtectedTopic(pattern) // exact
	}
	for _, p := range bus.ProtectedPrefixes() {
		if strings.HasPrefix(head, p) || strings.HasPrefix(p, head) {
			return true
		}
	}
	return false
}

func isPrefixPattern(p string) bool {
	return p != "" && strings.ContainsRune(":-./_", rune(p[len(p)-1]))
}
