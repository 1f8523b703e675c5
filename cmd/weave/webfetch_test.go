package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

const webSecret = "loopback-only-secret-8086"

// TestWebFetchRefusesThisMachineThroughTheBinary has the scripted model
// ask weave chat -p's webfetch for services only this machine should
// reach: a loopback-only server on 127.0.0.1 and on [::1], the cloud
// metadata address, and a host the config allows (localhost, through
// WEAVE_TOOLS_WEBFETCH_ALLOW) that redirects to the loopback servers by
// address. Every fetch is refused with the rule named; the secret reaches
// neither the model's requests, nor the output, nor .weave/.
func TestWebFetchRefusesThisMachineThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	serve := func(addr string, h http.HandlerFunc) *httptest.Server {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil
		}
		srv := httptest.NewUnstartedServer(h)
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		t.Cleanup(srv.Close)
		return srv
	}
	secret := func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, webSecret) }
	v4 := serve("127.0.0.1:0", secret)
	if v4 == nil {
		t.Fatal("cannot listen on 127.0.0.1")
	}
	targets := []string{v4.URL + "/secret"}
	type fetch struct{ url, want string }
	fetches := []fetch{
		{v4.URL + "/secret", "webfetch refused: 127.0.0.1 is a loopback address (tools.webfetch.allow widens this)"},
		{"http://169.254.169.254/latest/meta-data/iam/security-credentials/", "webfetch refused: 169.254.169.254 is a cloud metadata address (tools.webfetch.allow widens this)"},
	}
	if v6 := serve("[::1]:0", secret); v6 != nil {
		targets = append(targets, v6.URL+"/secret")
		fetches = append(fetches, fetch{v6.URL + "/secret", "webfetch refused: ::1 is a loopback address (tools.webfetch.allow widens this)"})
	} else {
		t.Log("no IPv6 loopback here: the [::1] fetches are not tried")
	}
	for _, to := range targets {
		b := serve("127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) })
		_, port, _ := net.SplitHostPort(b.Listener.Addr().String())
		from := "http://localhost:" + port + "/moved"
		host, _, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(to, "http://"), "/secret"))
		fetches = append(fetches, fetch{from, "webfetch refused: " + host + " is a loopback address (tools.webfetch.allow widens this); " + from + " redirected to " + to})
	}

	calls := make([]modeltest.ToolCall, len(fetches))
	for i, f := range fetches {
		calls[i] = modeltest.ToolCall{Name: "webfetch", Args: fmt.Sprintf(`{"url":%q}`, f.url)}
	}
	srv := modeltest.NewServer(t,
		modeltest.Turn{Text: "Fetching.", ToolCalls: calls},
		modeltest.Turn{Text: "Done."},
	)
	dir := project(t, nil)
	env := append(chatEnv(t, srv), "WEAVE_TOOLS_WEBFETCH_ALLOW=localhost", "WEAVE_TOOLS_WEBFETCH_TIMEOUT=10s")
	code, out, errOut := runWeave(t, bin, dir, env, "chat", "-p", "fetch these")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := reqs[1].Decode(&body); err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range body.Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != len(fetches) {
		t.Fatalf("%d tool results, want %d: %q", len(results), len(fetches), results)
	}
	for i, f := range fetches {
		if !strings.Contains(results[i], f.want) {
			t.Errorf("webfetch %s = %q, want %q", f.url, results[i], f.want)
		}
	}
	for _, r := range reqs {
		if bytes.Contains(r.Body, []byte(webSecret)) {
			t.Errorf("the model's request %s carries the loopback-only secret", r.Path)
		}
	}
	if strings.Contains(out+errOut, webSecret) {
		t.Errorf("weave printed the loopback-only secret:\n%s%s", out, errOut)
	}
	_ = filepath.WalkDir(filepath.Join(dir, ".weave"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(webSecret)) {
				t.Errorf("%s holds the loopback-only secret", path)
			}
		}
		return nil
	})
}
