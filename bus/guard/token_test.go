package guard_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

// TestTokenFileIsTheOwnersAlone: the bus token file a bus creates is
// readable by its owner only, in a directory only its owner enters, and a
// token file others could read, or a symlink, is refused.
func TestTokenFileIsTheOwnersAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "bus.token")
	tok, err := guard.LoadOrCreateToken(path)
	if err != nil || len(tok) != 64 {
		t.Fatalf("LoadOrCreateToken = %q, %v", tok, err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if again, err := guard.LoadOrCreateToken(path); err != nil || again != tok {
		t.Errorf("second LoadOrCreateToken = %q, %v; want the same token", again, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := guard.ReadTokenFile(path); err == nil || !strings.Contains(err.Error(), "can be read by others") || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("ReadTokenFile of a 0644 token = %v, want a refusal naming chmod 600", err)
	}
	link := filepath.Join(filepath.Dir(path), "link.token")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if got, err := guard.ReadTokenFile(link); err == nil {
		t.Errorf("ReadTokenFile through a symlink = %q, want a refusal", got)
	}
}
