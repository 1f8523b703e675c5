package jsonrpc

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/weavehq/weave/bus/bustest"
)

// connPair is a clientConn on one end of a loopback TCP connection and the
// bare server end, which the test writes frames to by hand.
func connPair(t *testing.T, maxMsg int64) (*clientConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		s, _ := ln.Accept()
		accepted <- s
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	c := &clientConn{nc: nc, maxMsg: maxMsg}
	t.Cleanup(func() { _ = nc.Close(); _ = srv.Close() })
	return c, srv
}

func frameBytes(t *testing.T, f ws.Frame) []byte {
	t.Helper()
	b, err := ws.CompileFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, w net.Conn, b []byte) {
	t.Helper()
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
}

// maxClientFrame bounds the payload readFrame accepts: the client under
// test writes small frames, and a declared length past this is a bug.
const maxClientFrame = 1 << 20

// readFrame reads one frame the client wrote and checks it is masked, as
// a client's frames must be.
func readFrame(t *testing.T, srv net.Conn) ws.Frame {
	t.Helper()
	_ = srv.SetReadDeadline(time.Now().Add(bustest.Deadline))
	h, err := ws.ReadHeader(srv)
	if err != nil {
		t.Fatalf("reading the client's frame header: %v", err)
	}
	if !h.Masked {
		t.Fatalf("client frame %v is not masked", h.OpCode)
	}
	if h.Length > maxClientFrame {
		t.Fatalf("client frame %v declares %d bytes, more than %d", h.OpCode, h.Length, maxClientFrame)
	}
	payload := make([]byte, h.Length)
	if _, err := io.ReadFull(srv, payload); err != nil {
		t.Fatalf("reading the client's frame payload: %v", err)
	}
	return ws.UnmaskFrameInPlace(ws.Frame{Header: h, Payload: payload})
}

func TestReadGivenUpKeepsHalfAFrame(t *testing.T) {
	c, srv := connPair(t, 1<<20)
	frame := frameBytes(t, ws.NewTextFrame([]byte(`{"jsonrpc":"2.0","id":"c1","result":{}}`)))
	write(t, srv, frame[:7])

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := c.readMessage(ctx)
		got <- err
	}()
	cancel()
	if err := bustest.Recv(t, "the cancelled read", got); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read = %v, want context.Canceled", err)
	}

	write(t, srv, frame[7:])
	rctx, rcancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer rcancel()
	msg, err := c.readMessage(rctx)
	if err != nil {
		t.Fatalf("read after the cancelled one = %v", err)
	}
	if string(msg) != `{"jsonrpc":"2.0","id":"c1","result":{}}` {
		t.Errorf("message = %q, want the whole frame", msg)
	}
}

func TestControlFramesAndFragments(t *testing.T) {
	c, srv := connPair(t, 1<<20)
	var in []byte
	in = append(in, frameBytes(t, ws.NewPingFrame([]byte("are you there")))...)
	in = append(in, frameBytes(t, ws.NewFrame(ws.OpText, false, []byte(`{"a":`)))...)
	in = append(in, frameBytes(t, ws.NewPongFrame(nil))...) // between fragments, as allowed
	in = append(in, frameBytes(t, ws.NewFrame(ws.OpContinuation, true, []byte(`1}`)))...)
	write(t, srv, in)

	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	msg, err := c.readMessage(ctx)
	if err != nil || string(msg) != `{"a":1}` {
		t.Fatalf("fragmented message = %q, %v; want {\"a\":1}", msg, err)
	}
	if f := readFrame(t, srv); f.Header.OpCode != ws.OpPong || string(f.Payload) != "are you there" {
		t.Errorf("answer to ping = %v %q, want a pong with the ping's payload", f.Header.OpCode, f.Payload)
	}

	write(t, srv, frameBytes(t, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, "bye"))))
	if _, err := c.readMessage(ctx); !errors.Is(err, errPeerClosed) {
		t.Errorf("read after the server's close frame = %v, want errPeerClosed", err)
	}
	wantClose(t, srv, ws.StatusGoingAway) // the server's own code, echoed
}

// wantClose reads the client's next frame and checks it is a close frame
// with code.
func wantClose(t *testing.T, srv net.Conn, code ws.StatusCode) {
	t.Helper()
	f := readFrame(t, srv)
	if f.Header.OpCode != ws.OpClose {
		t.Fatalf("client sent %v, want a close frame", f.Header.OpCode)
	}
	if got, _ := ws.ParseCloseFrameData(f.Payload); got != code {
		t.Errorf("close code = %d, want %d", got, code)
	}
}

func TestOversizeMessageFromServer(t *testing.T) {
	c, srv := connPair(t, 64)
	// Two fragments, each under the limit, together over it.
	write(t, srv, frameBytes(t, ws.NewFrame(ws.OpText, false, []byte(strings.Repeat("x", 40)))))
	write(t, srv, frameBytes(t, ws.NewFrame(ws.OpContinuation, true, []byte(strings.Repeat("x", 40)))))
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	if _, err := c.readMessage(ctx); !errors.Is(err, errTooBig) {
		t.Fatalf("read of an 80-byte message with a 64-byte limit = %v, want errTooBig", err)
	}
	wantClose(t, srv, ws.StatusMessageTooBig)
}

func TestWrittenMessageIsOneMaskedFrame(t *testing.T) {
	c, srv := connPair(t, 1<<20)
	long := strings.Repeat("é", 40000) // over 65535 bytes: the 8-byte length
	for _, msg := range []string{`{"x":1}`, long} {
		if err := c.writeMessage(context.Background(), []byte(msg)); err != nil {
			t.Fatal(err)
		}
		f := readFrame(t, srv)
		if !f.Header.Fin || f.Header.OpCode != ws.OpText || string(f.Payload) != msg {
			t.Errorf("frame fin=%v op=%v len=%d, want one final text frame of %d bytes", f.Header.Fin, f.Header.OpCode, len(f.Payload), len(msg))
		}
	}
}
