package guard

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// Refusal is what a face answers a request without the right token.
const Refusal = "missing or wrong bearer token: send Authorization: Bearer <bus.token>"

// Authorized reports whether r carries token as "Authorization: Bearer
// <token>". It is the bus's one bearer check: every face and route asks it.
// The comparison takes the same time whatever the token sent. An empty
// token authorizes every request: a face without a token trusts its peers.
func Authorized(r *http.Request, token string) bool {
	if token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// Challenge sets the WWW-Authenticate header of a refusal for want of the
// token.
func Challenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="weave-bus"`)
}

// Require serves h only to requests that carry token (Authorized), and
// answers the others 401 with Refusal. An empty token requires nothing.
func Require(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Authorized(r, token) {
			Challenge(w)
			http.Error(w, Refusal, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
