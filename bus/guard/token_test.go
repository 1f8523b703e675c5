package guard_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weavehq/weave/bus/guard"
)

func TestAuthorized(t *testing.T) {
	for _, tt := range []struct {
		token, header string
		want          bool
	}{
		{"", "", true},
		{"", "Bearer anything", true},
		{"s3cret", "Bearer s3cret", true},
		{"s3cret", "", false},
		{"s3cret", "Bearer s3cre", false},
		{"s3cret", "Bearer s3cret2", false},
		{"s3cret", "bearer s3cret", false},
		{"s3cret", "Basic s3cret", false},
		{"s3cret", "s3cret", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		if got := guard.Authorized(r, tt.token); got != tt.want {
			t.Errorf("Authorized(%q, token %q) = %v, want %v", tt.header, tt.token, got, tt.want)
		}
	}
}

func TestRequire(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tt := range []struct {
		token, header string
		want          int
	}{
		{"", "", http.StatusNoContent},
		{"s3cret", "Bearer s3cret", http.StatusNoContent},
		{"s3cret", "Bearer guess", http.StatusUnauthorized},
		{"s3cret", "", http.StatusUnauthorized},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		w := httptest.NewRecorder()
		guard.Require(tt.token, ok).ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("Require(%q) on %q = %d, want %d", tt.token, tt.header, w.Code, tt.want)
		}
		if w.Code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("Require(%q) on %q refused without a challenge", tt.token, tt.header)
		}
	}
}
