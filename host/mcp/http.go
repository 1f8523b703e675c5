package mcp

import (
	"fmt"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport is a Streamable HTTP server's transport, its headers on
// every request.
func (m *Manager) httpTransport(s Spec) (sdk.Transport, error) {
	client, url, err := m.httpClient(s)
	if err != nil {
		return nil, err
	}
	// Retries of a dropped stream are the manager's to make (it restarts
	// the session with backoff), so a dead server is seen at once.
	return &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: -1}, nil
}

// httpClient is the client of an http or sse server: its headers, with
// ${VAR} references read from the environment, added to every request.
func (m *Manager) httpClient(s Spec) (*http.Client, string, error) {
	url, err := m.expand(s.URL)
	if err != nil {
		return nil, "", fmt.Errorf("url: %w", err)
	}
	h := http.Header{}
	for _, k := range sortedKeys(s.Headers) {
		v, err := m.expand(s.Headers[k])
		if err != nil {
			return nil, "", fmt.Errorf("header %s: %w", k, err)
		}
		h.Set(k, v)
	}
	return &http.Client{Transport: headerRT{base: http.DefaultTransport, h: h}}, url, nil
}

type headerRT struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.h {
			r.Header[k] = v
		}
	}
	return t.base.RoundTrip(r)
}
