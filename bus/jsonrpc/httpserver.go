package jsonrpc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of HTTPLimits.
const (
	DefaultBodyTimeout = 30 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
	headerTimeout      = 10 * time.Second
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
