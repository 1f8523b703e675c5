package serve_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/guard"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/bus/serve"
)

func memoryBus(t *testing.T) *bus.Memory {
	t.Helper()
	b, err := bus.NewMemory(bus.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func open(t *testing.T, b bus.Bus, opts serve.Options) *serve.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	srv, err := serve.Open(ctx, b, opts)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// status sends method url with token (none when empty) and returns the
// status code and the WWW-Authenticate header.
func status(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s = %v", method, url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

func TestOpenNeedsAFace(t *testing.T) {
	if _, err := serve.Open(context.Background(), memoryBus(t), serve.Options{}); err == nil {
		t.Errorf("Open(no face) = nil, want an error")
	}
}

func TestOpenRefusesBeyondLoopbackWithoutToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "bus.token")
	for _, opts := range []serve.Options{
		{WS: "0.0.0.0:0", TokenFile: tokenFile},
		{HTTP: ":0", TokenFile: tokenFile},
	} {
		_, err := serve.Open(context.Background(), memoryBus(t), opts)
		var te *serve.TokenError
		if !errors.As(err, &te) {
			t.Errorf("Open(%+v) = %v, want a *TokenError", opts, err)
		}
	}
	if _, err := os.Stat(tokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Open left a token file (%v); want nothing started", err)
	}
}

// Without a configured token, Open keeps one in a 0600 file: the admin
// routes and the envelope commands need it, reads and the plain topics do
// not; the Unix socket needs none.
func TestOpenServesEveryFaceBehindOneGuard(t *testing.T) {
	b := memoryBus(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "bus.sock")
	srv := open(t, b, serve.Options{WS: "127.0.0.1:0", UDS: sock, HTTP: "127.0.0.1:0", TokenFile: filepath.Join(dir, "weave", "bus.token")})
	if srv.WS == "" || srv.HTTP == "" || srv.UDS != sock || srv.TokenFile == "" {
		t.Fatalf("Server = %+v, want every face and the token file", srv)
	}
	tok, err := guard.ReadTokenFile(srv.TokenFile)
	if err != nil || tok == "" {
		t.Fatalf("ReadTokenFile(%s) = %q, %v; want the token", srv.TokenFile, tok, err)
	}
	admin := "http://" + strings.TrimPrefix(srv.WS, "ws://") + jsonrpc.AdminDeadLettersPath
	for _, tt := range []struct {
		name, method, url, token string
		want                     int
	}{
		{"admin route without the token", "GET", admin, "", http.StatusUnauthorized},
		{"admin route with a wrong token", "GET", admin, "nope", http.StatusUnauthorized},
		{"admin route with the token", "GET", admin, tok, http.StatusOK},
		{"envelope read without the token", "GET", srv.HTTP + "/api/sessions", "", http.StatusOK},
		{"envelope command without the token", "POST", srv.HTTP + "/api/sessions", "", http.StatusUnauthorized},
		{"envelope command with the token", "POST", srv.HTTP + "/api/sessions", tok, http.StatusCreated},
	} {
		code, challenge := status(t, tt.method, tt.url, tt.token)
		if code != tt.want {
			t.Errorf("%s: %s %s = %d, want %d", tt.name, tt.method, tt.url, code, tt.want)
		}
		if code == http.StatusUnauthorized && !strings.HasPrefix(challenge, "Bearer") {
			t.Errorf("%s: WWW-Authenticate = %q, want a Bearer challenge", tt.name, challenge)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	c, err := jsonrpc.Dial(ctx, srv.WS, jsonrpc.ClientInfo{Name: "peer", Version: "1"}, jsonrpc.WithToken(tok), jsonrpc.WithoutReconnect())
	if err != nil {
		t.Fatalf("Dial(%s) = %v", srv.WS, err)
	}
	defer c.Close()
	if _, err := c.Ping(ctx); err != nil {
		t.Errorf("Ping = %v", err)
	}
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial the Unix socket: %v", err)
	}
	nc.Close()

	if err := srv.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	for _, addr := range []string{strings.TrimPrefix(srv.WS, "ws://"), strings.TrimPrefix(srv.HTTP, "http://")} {
		if nc, err := net.Dial("tcp", addr); err == nil {
			nc.Close()
			t.Errorf("%s still accepts connections after Close", addr)
		}
	}
	if nc, err := net.Dial("unix", sock); err == nil {
		nc.Close()
		t.Errorf("%s still accepts connections after Close", sock)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("a second Close = %v, want nil", err)
	}
}

// A configured token guards every request of the envelope HTTP face, reads
// included, and no token file is made.
func TestConfiguredTokenGuardsEveryRequest(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "bus.token")
	srv := open(t, memoryBus(t), serve.Options{HTTP: "127.0.0.1:0", Token: "s3cret", TokenFile: tokenFile})
	if srv.TokenFile != "" {
		t.Errorf("TokenFile = %q with a configured token, want none", srv.TokenFile)
	}
	if code, _ := status(t, "GET", srv.HTTP+"/api/health", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/health without the token = %d, want 401", code)
	}
	if code, _ := status(t, "GET", srv.HTTP+"/api/health", "s3cret"); code != http.StatusOK {
		t.Errorf("GET /api/health with the token = %d, want 200", code)
	}
}

// With the default handler on, the host's topics the table keeps from it
// are answered "not processed" by the oldest subscription; the bus's own
// dead-letter topic is left alone; Close removes the subscriptions.
func TestAgentCommandKeepsOffHostTopics(t *testing.T) {
	b := memoryBus(t)
	srv := open(t, b, serve.Options{UDS: filepath.Join(t.TempDir(), "bus.sock"), AgentCommand: []string{"true"}})
	ctx := context.Background()
	for _, topic := range []string{"hook:tool.execute.before", "loop:other", "model:ses_1"} {
		res, err := b.Request(ctx, bus.Message{Topic: topic, Payload: []byte(`{}`)})
		if err != nil || res.Delivered != 1 || res.Processed() {
			t.Errorf("Request(%s) = %+v, %v; want one not-processed delivery", topic, res, err)
		}
	}
	if res, err := b.Request(ctx, bus.Message{Topic: "agent:new", Payload: []byte(`{}`)}); err != nil || res.Delivered != 0 {
		t.Errorf("Request(agent:new) = %+v, %v; want no subscriber (agents may be started there)", res, err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if res, err := b.Request(ctx, bus.Message{Topic: "hook:tool.execute.before", Payload: []byte(`{}`)}); err != nil || res.Delivered != 0 {
		t.Errorf("Request(hook:...) after Close = %+v, %v; want no subscriber left", res, err)
	}
}
