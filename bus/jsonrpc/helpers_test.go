package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
)

func TestMain(m *testing.M) {
	if os.Getenv("WEAVE_TEST_AGENT") == "1" {
		os.Exit(agentMain())
	}
	os.Exit(m.Run())
}

// agentMain is the agent started by the default handler in tests: it does
// what a real agent does with its environment and answers each message
// with its identity and environment.
func agentMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := jsonrpc.Dial(ctx, os.Getenv("WEAVE_BUS_URL"), jsonrpc.ClientInfo{Name: "test-agent", Version: "1"},
		jsonrpc.WithClientID(os.Getenv("WEAVE_AGENT_ID")), jsonrpc.WithToken(os.Getenv("WEAVE_BUS_TOKEN")))
	if err != nil {
		return 3
	}
	defer c.Close()
	env := map[string]string{}
	for _, k := range []string{"WEAVE_WORKSPACE", "WEAVE_DEFAULT_TOPIC", "WEAVE_AGENT_ID", "WEAVE_BUS_URL", "BUB_WORKSPACE", "BUB_DEFAULT_TOPIC", "BUB_AGENT_ID", "BUB_BUS_URL"} {
		env[k] = os.Getenv(k)
	}
	wd, _ := os.Getwd()
	env["PWD"] = wd
	env["PID"] = strconv.Itoa(os.Getpid())
	report, _ := json.Marshal(env)
	err = c.Subscribe(ctx, os.Getenv("WEAVE_DEFAULT_TOPIC"), func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true, Message: string(report)}, nil
	}, jsonrpc.SubscribeOptions{Method: "processMessage"})
	if err != nil {
		return 4
	}
	<-ctx.Done()
	return 0
}

type harness struct {
	bus *bus.Memory
	srv *jsonrpc.Server
	url string
}

func newHarness(t *testing.T, busOpts bus.Options, opts jsonrpc.Options) *harness {
	t.Helper()
	return newHarnessWith(t, busOpts, opts, nil)
}

// newHarnessWith lets set change the server options once the URL is known.
func newHarnessWith(t *testing.T, busOpts bus.Options, opts jsonrpc.Options, set func(url string, o *jsonrpc.Options)) *harness {
	t.Helper()
	b, err := bus.NewMemory(busOpts)
	if err != nil {
		t.Fatal(err)
	}
	var srv *jsonrpc.Server
	hs := httptest.NewUnstartedServer(nil) // 127.0.0.1
	url := "ws://" + hs.Listener.Addr().String()
	opts.Loopback = true
	if set != nil {
		set(url, &opts)
	}
	if srv, err = jsonrpc.NewServer(b, opts); err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = srv
	hs.Start()
	t.Cleanup(func() {
		_ = srv.Close()
		hs.Close()
		_ = b.Close()
	})
	return &harness{bus: b, srv: srv, url: url}
}

func (h *harness) client(t *testing.T, id string) *jsonrpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	c, err := jsonrpc.Dial(ctx, h.url, jsonrpc.ClientInfo{Name: "test", Version: "1"}, jsonrpc.WithClientID(id))
	if err != nil {
		t.Fatalf("Dial(%s) = %v", h.url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// raw is a WebSocket connection speaking raw frames.
type raw struct {
	t  *testing.T
	ws *websocket.Conn
}

func (h *harness) raw(t *testing.T) *raw {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, h.url, nil)
	if err != nil {
		t.Fatalf("websocket.Dial(%s) = %v", h.url, err)
	}
	ws.SetReadLimit(16 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &raw{t: t, ws: ws}
}

func (r *raw) send(frame string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	if err := r.ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		r.t.Fatalf("write %s: %v", frame, err)
	}
}

// recv reads one frame and decodes it as any JSON value.
func (r *raw) recv() any {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	_, data, err := r.ws.Read(ctx)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		r.t.Fatalf("frame %s is not JSON: %v", data, err)
	}
	return v
}

func (r *raw) readErr() error {
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	_, _, err := r.ws.Read(ctx)
	return err
}

// roundTrip sends a frame and returns the next frame.
func (r *raw) roundTrip(frame string) any {
	r.t.Helper()
	r.send(frame)
	return r.recv()
}

func (r *raw) init(id string) {
	r.t.Helper()
	got := r.roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientId":"` + id + `","clientInfo":{"name":"raw","version":"1"}}}`)
	if m, ok := got.(map[string]any); !ok || m["result"] == nil {
		r.t.Fatalf("initialize = %v, want a result", got)
	}
}

// decode parses a JSON literal for comparisons.
func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

// errCode returns the error code of a single response, 0 when none.
func errCode(v any) float64 {
	m, _ := v.(map[string]any)
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// ignoreMessages drops error messages and timestamps from a decoded frame
// so tests compare codes, ids and results.
var ignoreMessages = cmp.FilterPath(func(p cmp.Path) bool {
	last := p.Last().String()
	return last == `["message"]` || last == `["timestamp"]` || last == `["data"]`
}, cmp.Ignore())

func rpcCode(err error) int {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func payload(typ string, fields ...any) json.RawMessage {
	p := map[string]any{"type": typ}
	for i := 0; i+1 < len(fields); i += 2 {
		p[fields[i].(string)] = fields[i+1]
	}
	raw, _ := json.Marshal(p)
	return raw
}
