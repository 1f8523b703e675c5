package jsonrpc_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// slowTopic subscribes a handler on slow:* that reports each message it
// gets on entered and answers only once release is closed.
func slowTopic(t *testing.T, h *harness) (entered chan string, release chan struct{}) {
	t.Helper()
	entered, release = make(chan string, 1024), make(chan struct{})
	_, err := h.bus.Subscribe(context.Background(), "slow:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		entered <- m.Topic
		select {
		case <-release:
		case <-ctx.Done():
		}
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{Name: "slow", Cooperative: true})
	if err != nil {
		t.Fatal(err)
	}
	return entered, release
}

func TestCancelledCallKeepsTheConnection(t *testing.T) {
	h := newHarness(t, bus.Options{RequestTimeout: time.Minute}, jsonrpc.Options{})
	entered, release := slowTopic(t, h)
	c := h.client(t, "patient")

	// The call reads the connection itself while it waits; its context
	// ends mid-read.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.SendMessage(ctx, "slow:1", payload("x"))
		errc <- err
	}()
	bustest.Recv(t, "the slow handler to get the message", entered)
	cancel()
	if err := bustest.Recv(t, "the cancelled call", errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call = %v, want context.Canceled", err)
	}

	// A publisher's requests are answered in order: the late answer comes
	// first, and is dropped.
	close(release)
	ctx2, cancel2 := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel2()
	if _, err := c.Ping(ctx2); err != nil {
		t.Fatalf("Ping after a cancelled call = %v", err)
	}
	if _, err := c.SendMessage(ctx2, "slow:2", payload("x")); err != nil {
		t.Fatalf("call after the late answer = %v", err)
	}
	if n := c.Connections(); n != 1 {
		t.Errorf("connections = %d, want 1: a cancelled call must not cost the connection", n)
	}
}

func TestConcurrentCallsWithCancellations(t *testing.T) {
	h := newHarness(t, bus.Options{RequestTimeout: time.Minute}, jsonrpc.Options{})
	// Answers come a little after the callers below have given up, and
	// must be dropped without harm.
	_, err := h.bus.Subscribe(context.Background(), "slow:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		time.Sleep(5 * time.Millisecond)
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{Name: "slow", Cooperative: true})
	if err != nil {
		t.Fatal(err)
	}
	c := h.client(t, "busy")
	rec := bustest.Processed()
	if err := c.Subscribe(context.Background(), "news:*", rec.Handle, jsonrpc.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	pub := h.client(t, "pub")

	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				switch i % 3 {
				case 0: // gives up while it, or another call, reads
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+g%4)*time.Millisecond)
					_, err := c.SendMessage(ctx, "slow:x", payload("x"))
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						errs <- err
					}
				case 1:
					ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
					_, err := c.Ping(ctx)
					cancel()
					if err != nil {
						errs <- err
					}
				case 2: // a delivery to c in the middle of its own calls
					ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
					res, err := pub.SendMessage(ctx, "news:x", payload("x"))
					cancel()
					if err == nil && (len(res.Acks) != 1 || !res.Acks[0].Processed) {
						err = errors.New("delivery to the busy client not processed")
					}
					if err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call: %v", err)
	}
	if n := c.Connections(); n != 1 {
		t.Errorf("connections = %d, want 1", n)
	}
}

// cuttable forwards TCP connections to target until cut.
type cuttable struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCuttable(t *testing.T, target string) *cuttable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttable{ln: ln}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *cuttable) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func TestIdleClientNoticesALostConnection(t *testing.T) {
	h := newHarness(t, bus.Options{}, jsonrpc.Options{})
	p := newCuttable(t, strings.TrimPrefix(h.url, "ws://"))
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	c, err := jsonrpc.Dial(ctx, "ws://"+p.ln.Addr().String(), jsonrpc.ClientInfo{Name: "quiet", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	// No call is made from here on: only a reader of the idle client can
	// see the connection go.
	p.cut()
	bustest.WaitFor(t, "the idle client to redial", func() bool { return c.Connections() == 2 })
	if _, err := c.Ping(ctx); err != nil {
		t.Errorf("Ping on the new connection = %v", err)
	}
}

func TestDialOverTLS(t *testing.T) {
	b, err := bus.NewMemory(bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv, err := jsonrpc.NewServer(b, jsonrpc.Options{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	hs.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	hs.StartTLS()
	defer func() { _ = srv.Close(); hs.Close() }()
	url := "wss://" + strings.TrimPrefix(hs.URL, "https://")
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()

	if c, err := jsonrpc.Dial(ctx, url, jsonrpc.ClientInfo{Name: "tls"}); err == nil {
		c.Close()
		t.Fatal("Dial to a server whose certificate nobody trusts = nil error")
	}
	trust := hs.Client().Transport.(*http.Transport).TLSClientConfig
	c, err := jsonrpc.Dial(ctx, url, jsonrpc.ClientInfo{Name: "tls"}, jsonrpc.WithTLSConfig(trust))
	if err != nil {
		t.Fatalf("Dial over TLS = %v", err)
	}
	defer c.Close()
	if _, err := c.Ping(ctx); err != nil {
		t.Errorf("Ping over TLS = %v", err)
	}
}
