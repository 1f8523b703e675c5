package guard

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Harden returns the server and the listener a bus face serves h on, with
// the HTTP policy of every bus face (the JSON-RPC WebSocket and its admin
// routes, the v1 envelope face over HTTP) applied; serve with
// srv.Serve(ln). The policy, in one place:
//
//   - Same origin. A browser page on another site must not drive a bus on
//     this machine: a request whose Origin, when sent, is not the request's
//     own host is refused (403), and on a loopback listener so is one whose
//     Host is not localhost or a loopback address with the listener's port
//     (DNS rebinding: a name the attacker controls resolved to 127.0.0.1).
//     Clients that are not browsers send no Origin and name the address
//     they dialled, so they pass. Beyond loopback any Host is taken: the
//     token guards it.
//   - Loopback. A listen address is loopback only when its host is
//     localhost or a loopback IP (IsLoopback); an empty host listens
//     everywhere. A face beyond loopback needs a token; the faces and
//     bus/serve refuse to listen there without one.
//   - Limits. A client that sends its headers (10s) or body
//     (bus.http_body_timeout) slowly, or keeps a connection idle
//     (bus.http_idle_timeout), is cut off; connections past
//     bus.max_connections are answered 503 and closed (Limit). There is no
//     write timeout: event streams and WebSockets live long.
//
// The token itself is checked by Authorized (token.go), the one bearer
// check of the bus.
func Harden(ln net.Listener, loopback bool, h http.Handler, l HTTPLimits) (*http.Server, net.Listener) {
	l = l.withDefaults()
	return NewHTTPServer(SameOrigin(ln.Addr(), loopback, h), l), Limit(ln, l.MaxConns)
}

// Defaults of HTTPLimits.
const (
	// DefaultMaxConnections bounds the open connections of one listener.
	DefaultMaxConnections = 1024
	DefaultBodyTimeout    = 30 * time.Second
	DefaultIdleTimeout    = 2 * time.Minute
	headerTimeout         = 10 * time.Second
)

// HTTPLimits bound what one HTTP client of a bus face can hold: a client
// that sends its headers or body slowly, or keeps an idle connection, is
// cut off, and connections past MaxConns are answered 503 and closed.
type HTTPLimits struct {
	// BodyTimeout bounds reading one request body (bus.http_body_timeout).
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request
	// (bus.http_idle_timeout).
	IdleTimeout time.Duration
	// MaxConns bounds the open connections, WebSockets and event streams
	// included (bus.max_connections).
	MaxConns int
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConnections
	}
	return l
}

// NewHTTPServer returns a server for h with the limits applied. Serve it
// on Limit(ln, l) for the connection cap. There is no write timeout: event
// streams and WebSockets live long, and a body timeout, unlike
// http.Server.ReadTimeout, ends once the body is read, so it does not cut
// them.
func NewHTTPServer(h http.Handler, l HTTPLimits) *http.Server {
	l = l.withDefaults()
	return &http.Server{
		Handler:           bodyDeadline(l.BodyTimeout, h),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       l.IdleTimeout,
	}
}

// bodyDeadline gives a request with a body d to send all of it; the
// deadline is lifted once the body is read, so a handler that then streams
// keeps its connection.
func bodyDeadline(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err == nil {
			r.Body = &timedBody{ReadCloser: r.Body, rc: rc, d: d}
		}
		h.ServeHTTP(w, r)
	})
}

type timedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	d    time.Duration
	done bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF) && !b.done:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("the request body took longer than %s to arrive: %w", b.d, err)
	}
	return n, err
}

// Limit returns ln accepting at most max open connections; one past it is
// answered "503 Service Unavailable" naming bus.max_connections and closed.
func Limit(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	return &limitListener{Listener: ln, sem: make(chan struct{}, max), max: max}
}

type limitListener struct {
	net.Listener
	sem chan struct{}
	max int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			go refuse(c, l.max)
		}
	}
}

func refuse(c net.Conn, max int) {
	defer c.Close()
	body := fmt.Sprintf("the bus holds its limit of %d connections (bus.max_connections): close some or raise the limit\n", max)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nRetry-After: 5\r\nConnection: close\r\n\r\n%s", len(body), body)
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// IsLoopback reports whether a listen address (host:port) only accepts
// connections from this machine. An empty host listens everywhere, so it is
// not loopback; "localhost" is.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
