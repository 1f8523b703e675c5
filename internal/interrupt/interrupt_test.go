package interrupt

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
)

// pipe is a connected pair of loopback sockets.
func pipe(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		got <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-got
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestOnDoneWakesTheReadAndLeavesTheSocketUsable(t *testing.T) {
	a, b := pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		restore := OnDone(ctx, a.SetReadDeadline)
		_, err := a.Read(make([]byte, 1))
		restore()
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the ctx ended = %v, want a deadline error", err)
	}
	// The deadline is gone: the next read waits for data, and gets it.
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if n, err := a.Read(buf); err != nil || n != 1 || buf[0] != 'x' {
		t.Fatalf("next read = %d %q %v, want the byte written", n, buf[:n], err)
	}
}

func TestOnDoneAfterRestoreDoesNothing(t *testing.T) {
	a, b := pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	OnDone(ctx, a.SetReadDeadline)()
	cancel() // too late: the watch was stopped
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(make([]byte, 1)); err != nil {
		t.Fatalf("read after a stopped watch's ctx ended = %v, want the byte", err)
	}
}
