package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/textcap"
)

// post runs an http hook: the event's JSON is POSTed to the hook's URL and
// the answer read as a command's output would be. A 2xx answer is exit 0
// with the body as stdout (empty: allow; JSON: Claude Code's decision
// fields); any other status is a failure of the hook, which its failure
// policy settles (open: the event goes on), as in Claude Code, where only a
// 2xx body can block. The body is bounded as a command's stdout is; the
// hook's timeout bounds the whole exchange. Redirects are not followed.
func (h *CommandHook) post(ctx context.Context, input []byte) (stdout []byte, stderr string, code int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.spec.URL, bytes.NewReader(input))
	if err != nil {
		return nil, "", 0, fmt.Errorf("http hook %s: %w", h.spec.Name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h.spec.Headers {
		req.Header.Set(k, h.expandHeader(v))
	}
	client := h.opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", 0, fmt.Errorf("http hook %s: %w", h.spec.Name, ctx.Err())
		}
		// The address, never the headers: they may carry a token.
		return nil, "", 0, fmt.Errorf("http hook %s: POST %s: %w", h.spec.Name, h.spec.URL, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCommandOutput+1))
	if err != nil {
		return nil, "", 0, fmt.Errorf("http hook %s: read the answer: %w", h.spec.Name, err)
	}
	if len(body) > maxCommandOutput {
		return nil, "", 0, fmt.Errorf("http hook %s: %w", h.spec.Name, &outputLimitError{Stream: "answer", Limit: maxCommandOutput})
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Sprintf("%s: %s", resp.Status, textcap.Cap(strings.TrimSpace(string(body)), 200)), 1, nil
	}
	return body, "", 0, nil
}

// expandHeader replaces $VAR and ${VAR} in a header value with the
// variable when the hook's allowedEnvVars names it, and with nothing
// otherwise: a config line cannot send a secret it did not name.
func (h *CommandHook) expandHeader(v string) string {
	return os.Expand(v, func(name string) string {
		if !slices.Contains(h.spec.AllowedEnvVars, name) || slices.Contains(h.opts.Hide, name) {
			return ""
		}
		// Weave's own credentials stay weave's, as with a command hook.
		if v := h.lookupEnv(name); !proc.IsWeaveCredential(name, v) {
			return v
		}
		return ""
	})
}

// lookupEnv reads a variable from the environment the hook is given.
func (h *CommandHook) lookupEnv(name string) string {
	if h.opts.Env == nil {
		return os.Getenv(name)
	}
	for _, kv := range h.opts.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
