//go:build linux

package envelope

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"
)

// scriptedBus accepts one connection and hands each line the client sends
// to answer, which writes what the bus says back.
func scriptedBus(t *testing.T, answer func(n int, req Envelope, w net.Conn)) string {
	t.Helper()
	path := sockPath(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		r := bufio.NewReader(nc)
		for n := 0; ; n++ {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var req Envelope
			if err := json.Unmarshal(line, &req); err != nil {
				return
			}
			answer(n, req, nc)
		}
	}()
	return path
}

// unread is how many bytes wait in nc's socket, not yet read.
func unread(t *testing.T, nc net.Conn) int {
	raw, err := nc.(*net.UnixConn).SyscallConn()
	if err != nil {
		t.Error(err)
		return 0
	}
	var n int32
	_ = raw.Control(func(fd uintptr) {
		syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	})
	return int(n)
}

func replyLine(t *testing.T, req Envelope, text string) []byte {
	t.Helper()
	b, err := json.Marshal(Envelope{V: 1, Type: req.Type, ID: NewID(), Corr: req.ID, Status: StatusOK, Payload: json.RawMessage(`{"text":"` + text + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// A Do that reads its own reply and is cancelled mid-line leaves the rest
// of the line to the next reader: the next Do gets its reply, and the cut
// reply, which nobody waits for now, is dropped.
func TestClientDoCancelledMidLineKeepsTheStream(t *testing.T) {
	var mu sync.Mutex
	var cut []byte
	halfSent := make(chan struct{})
	path := scriptedBus(t, func(n int, req Envelope, w net.Conn) {
		switch n {
		case 0:
			line := replyLine(t, req, "first")
			mu.Lock()
			cut = line[len(line)/2:]
			mu.Unlock()
			w.Write(line[:len(line)/2])
			close(halfSent)
		case 1:
			mu.Lock()
			w.Write(cut)
			mu.Unlock()
			w.Write(replyLine(t, req, "second"))
		}
	})
	c := dial(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the client has taken the half line off the socket,
		// so that the cut falls inside a line it holds.
		<-halfSent
		for unread(t, c.nc) > 0 {
			runtime.Gosched()
		}
		cancel()
	}()
	if _, err := c.Do(ctx, Envelope{Type: TypeSessionCreate, Src: "t"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do cancelled while its reply was half read = %v, want context.Canceled", err)
	}
	reply, err := c.Do(context.Background(), Envelope{Type: TypeSessionCreate, Src: "t"})
	if err != nil {
		t.Fatalf("Do after a cancelled one: %v", err)
	}
	if !strings.Contains(string(reply.Payload), "second") {
		t.Errorf("reply = %s, want the second command's", reply.Payload)
	}
}

// Envelopes the bus pushes while a Do reads its own reply reach Events, in
// order, before and after Events is first called.
func TestClientDoPassesPushedEnvelopesToEvents(t *testing.T) {
	path := scriptedBus(t, func(n int, req Envelope, w net.Conn) {
		push, _ := json.Marshal(Envelope{V: 1, Type: TypeMessageCreated, ID: NewID(), Payload: json.RawMessage(`{"n":` + string(rune('0'+n)) + `}`)})
		w.Write(append(push, '\n'))
		w.Write(replyLine(t, req, "ok"))
	})
	c := dial(t, path)
	for i := 0; i < 2; i++ {
		if _, err := c.Do(context.Background(), Envelope{Type: TypeSessionCreate, Src: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		e := <-c.Events()
		if want := `{"n":` + string(rune('0'+i)) + `}`; string(e.Payload) != want {
			t.Fatalf("event %d = %s, want %s", i, e.Payload, want)
		}
	}
	c.Close()
	for range c.Events() {
	}
}
