package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/weavehq/weave/internal/netpolicy"
	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolWebFetch, func(ctx context.Context, t *Tools, c call) (plugins.ToolResult, error) {
		return t.webfetch(ctx, c.args)
	})
}

const maxRedirects = 10

func (t *Tools) webfetch(ctx context.Context, args map[string]any) (plugins.ToolResult, error) {
	wc := t.limits.WebFetch
	if !wc.Enabled {
		return failf("webfetch is turned off in this project (tools.webfetch.enabled: false); work from the files in the project, or ask the user to enable it")
	}
	raw, err := stringArg(args, argURL, true)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if m, err := stringArg(args, argMethod, false); err != nil {
		return plugins.ToolResult{}, err
	} else if m != "" && !strings.EqualFold(m, http.MethodGet) {
		return failf("webfetch only makes GET requests, not %s", strings.ToUpper(m))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return failf("webfetch: %q is not a valid URL: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return failf("webfetch: %q is not an http or https URL", raw)
	}
	if u.Host == "" {
		return failf("webfetch: %q has no host", raw)
	}
	if wc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wc.Timeout)
		defer cancel()
	}
	tr := t.web.transport()
	defer tr.CloseIdleConnections()
	// No client timeout: the context bounds the whole exchange.
	client := &http.Client{Transport: tr}
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("redirect to %s, which is not http or https", req.URL)
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return failf("webfetch %s: %v", raw, err)
	}
	req.Header.Set("User-Agent", "weave-webfetch/1")
	resp, err := client.Do(req)
	if err != nil {
		var refused *netpolicy.Refusal
		if errors.As(err, &refused) {
			if ue, ok := err.(*url.Error); ok && ue.URL != u.String() {
				return failf("webfetch refused: %v; %s redirected to %s", refused, raw, ue.URL)
			}
			return failf("webfetch refused: %v", refused)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return failf("webfetch %s: no answer within %s (tools.webfetch.timeout)", raw, wc.Timeout)
		}
		if errors.Is(err, context.Canceled) {
			return plugins.ToolResult{}, fmt.Errorf("webfetch %s: %w", raw, err)
		}
		return failf("webfetch %s: %v", raw, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(wc.MaxBytes)+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return failf("webfetch %s: the body did not arrive within %s (tools.webfetch.timeout)", raw, wc.Timeout)
		}
		return failf("webfetch %s: reading the body: %v", raw, err)
	}
	cut := len(body) > wc.MaxBytes
	if cut {
		body = body[:wc.MaxBytes]
	}
	var out strings.Builder
	fmt.Fprintf(&out, "GET %s\nstatus: %s\ncontent-type: %s\n\n", resp.Request.URL, resp.Status, resp.Header.Get("Content-Type"))
	out.Write(body)
	if cut {
		fmt.Fprintf(&out, "\n[body cut at %d bytes (tools.webfetch.max_bytes)]\n", wc.MaxBytes)
	}
	return plugins.ToolResult{Output: out.String(), IsError: resp.StatusCode >= 400}, nil
}
