package jsonrpc

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/weavehq/weave/bus"
)

// The protected topics are those whose traffic can change what a run does:
// hook decisions (hook:), agent requests and delegation (agent:) and the
// bus's own topics such as dead letters (system:), as the topic table says
// (bus.ProtectedPrefixes). On a server with a token, only peers that sent
// it may subscribe to them or send on them; other loopback peers keep every
// other topic.

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

// SameOrigin refuses requests a browser page on another site could make:
// those whose Host is not one of the listener's names (DNS rebinding: a
// name the attacker controls resolved to 127.0.0.1) and those whose Origin,
// when sent, is not the request's own host. Clients that are not browsers
// send no Origin and name the address they dialled, so they pass. On a
// loopback listener the names are localhost and loopback addresses with the
// listener's port; beyond loopback any Host is taken (the token guards it).
func SameOrigin(listen net.Addr, loopback bool, h http.Handler) http.Handler {
	_, port, _ := net.SplitHostPort(listen.String())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopback && !loopbackHost(r.Host, port) {
			http.Error(w, "forbidden: the Host "+r.Host+" is not this bus's address; connect to 127.0.0.1:"+port, http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || !strings.EqualFold(u.Host, r.Host) {
				http.Error(w, "forbidden: requests from the web origin "+o+" are refused", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport, port string) bool {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil || p != port {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
