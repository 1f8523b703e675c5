package tools

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/config"
)

const loopbackSecret = "loopback-only-secret-4711"

// secretServer serves the secret on /secret at addr (127.0.0.1:0 or
// [::1]:0), as a service of this machine that only listens on loopback.
func secretServer(t *testing.T, addr string) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, loopbackSecret)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// dialLog records what webfetch connected to, around the real dial.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) wrap(w *webNet) {
	real := w.dial
	w.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.mu.Lock()
		d.addrs = append(d.addrs, addr)
		d.mu.Unlock()
		return real(ctx, network, addr)
	}
}

func (d *dialLog) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// TestWebFetchRefusesThisMachine has a hostile model fetch services only
// this machine should reach: loopback on IPv4 and IPv6, the cloud metadata
// address, a name that resolves to loopback (DNS rebinding), and an
// allowed host that redirects to loopback. Each is refused with the rule
// named, the secret never reaches the result, and a refused address is
// never dialled.
func TestWebFetchRefusesThisMachine(t *testing.T) {
	v4 := secretServer(t, "127.0.0.1:0")
	bounce := func(to string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to, http.StatusFound)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	spindle := Caller{Agent: "spindle"}
	fetch := func(t *testing.T, e *toolsEnv, url string, want string) []string {
		t.Helper()
		var log dialLog
		log.wrap(&e.tools.web)
		res := e.call(t, spindle, "webfetch", map[string]any{"url": url})
		expect(t, "webfetch "+url, res, true, want)
		if strings.Contains(res.Output, loopbackSecret) {
			t.Errorf("webfetch %s returned the loopback-only secret: %q", url, res.Output)
		}
		return log.dialled()
	}

	t.Run("127.0.0.1", func(t *testing.T) {
		e := newToolsEnv(t, nil, nil)
		if d := fetch(t, e, v4.URL+"/secret", "webfetch refused: 127.0.0.1 is a loopback address (tools.webfetch.allow widens this)"); len(d) != 0 {
			t.Errorf("dialled %v, want nothing", d)
		}
	})
	t.Run("[::1]", func(t *testing.T) {
		v6 := secretServer(t, "[::1]:0")
		e := newToolsEnv(t, nil, nil)
		if d := fetch(t, e, v6.URL+"/secret", "webfetch refused: ::1 is a loopback address (tools.webfetch.allow widens this)"); len(d) != 0 {
			t.Errorf("dialled %v, want nothing", d)
		}
	})
	for _, tc := range []struct{ url, want string }{
		{"http://169.254.169.254/latest/meta-data/iam/security-credentials/", "webfetch refused: 169.254.169.254 is a cloud metadata address (tools.webfetch.allow widens this)"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "webfetch refused: fd00:ec2::254 is a cloud metadata address"},
		{"http://[::ffff:127.0.0.1]:80/", "webfetch refused: ::ffff:127.0.0.1 is a loopback address"},
		{"http://0.0.0.0:80/", "webfetch refused: 0.0.0.0 is an unspecified address"},
		{"http://10.0.0.1/", "webfetch refused: 10.0.0.1 is a private address"},
		{"http://169.254.1.1/", "webfetch refused: 169.254.1.1 is a link-local address"},
		{"http://100.64.0.1/", "webfetch refused: 100.64.0.1 is a shared (CGNAT) address"},
		{"https://169.254.169.254/", "webfetch refused: 169.254.169.254 is a cloud metadata address"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			e := newToolsEnv(t, nil, nil)
			if d := fetch(t, e, tc.url, tc.want); len(d) != 0 {
				t.Errorf("dialled %v, want nothing", d)
			}
		})
	}
	t.Run("a name that resolves to loopback", func(t *testing.T) {
		e := newToolsEnv(t, nil, nil)
		e.tools.web.lookup = func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		_, port, _ := net.SplitHostPort(v4.Listener.Addr().String())
		if d := fetch(t, e, "http://rebind.example:"+port+"/secret",
			"webfetch refused: rebind.example resolves to 127.0.0.1, which is a loopback address (tools.webfetch.allow widens this)"); len(d) != 0 {
			t.Errorf("dialled %v, want nothing", d)
		}
	})
	t.Run("an allowed host redirecting to loopback", func(t *testing.T) {
		e := newToolsEnv(t, func(c *config.Config) { c.Tools.WebFetch.Allow = []string{"localhost"} }, nil)
		e.tools.web.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
			if host != "localhost" {
				return nil, fmt.Errorf("no such host %s", host)
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		targets := []string{v4.URL + "/secret"}
		if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
			ln.Close()
			targets = append(targets, secretServer(t, "[::1]:0").URL+"/secret")
		}
		for _, to := range targets {
			b := bounce(to)
			_, port, _ := net.SplitHostPort(b.Listener.Addr().String())
			from := "http://localhost:" + port + "/moved"
			host := strings.Trim(strings.TrimSuffix(strings.TrimPrefix(to, "http://"), "/secret"), "[]")
			host = host[:strings.LastIndex(host, ":")]
			d := fetch(t, e, from, "webfetch refused: "+strings.Trim(host, "[]")+" is a loopback address (tools.webfetch.allow widens this); "+from+" redirected to "+to)
			if len(d) != 1 || d[0] != "127.0.0.1:"+port {
				t.Errorf("dialled %v, want only the allowed host, 127.0.0.1:%s", d, port)
			}
		}
	})
	t.Run("allowed by config", func(t *testing.T) {
		e := newToolsEnv(t, func(c *config.Config) { c.Tools.WebFetch.Allow = []string{"127.0.0.0/8"} }, nil)
		res := e.call(t, spindle, "webfetch", map[string]any{"url": v4.URL + "/secret"})
		expect(t, "allowed webfetch", res, false, loopbackSecret)
	})
	t.Run("deny wins over allow, before resolution", func(t *testing.T) {
		e := newToolsEnv(t, func(c *config.Config) {
			c.Tools.WebFetch.Allow = []string{"127.0.0.0/8"}
			c.Tools.WebFetch.Deny = []string{"localhost", "127.0.0.1"}
		}, nil)
		resolved := false
		e.tools.web.lookup = func(context.Context, string) ([]netip.Addr, error) {
			resolved = true
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		_, port, _ := net.SplitHostPort(v4.Listener.Addr().String())
		if d := fetch(t, e, "http://localhost:"+port+"/secret", "webfetch refused: localhost is denied by tools.webfetch.deny (localhost)"); len(d) != 0 || resolved {
			t.Errorf("dialled %v, resolved %v; want neither", d, resolved)
		}
		if d := fetch(t, e, v4.URL+"/secret", "webfetch refused: 127.0.0.1 is denied by tools.webfetch.deny (127.0.0.1)"); len(d) != 0 {
			t.Errorf("dialled %v, want nothing", d)
		}
	})
}
