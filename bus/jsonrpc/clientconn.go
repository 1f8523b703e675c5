package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"

	"github.com/weavehq/weave/internal/interrupt"
)

// clientConn is the Go client's end of one WebSocket connection. Bytes
// read from the socket stay in a buffer until they make a whole frame, so
// a read given up when its context ends loses nothing and leaves the
// connection usable: whichever goroutine waits for a reply can read it
// itself, with no hand-off to a reader goroutine, and still return at its
// deadline without closing the connection under every other call.
// (coder/websocket, used by the server, closes a connection whenever a read
// is cancelled, which is why the client frames its own messages.)
type clientConn struct {
	nc     net.Conn
	maxMsg int64

	wmu  sync.Mutex // one frame written at a time
	wbuf []byte

	closeOnce sync.Once

	// The read side belongs to whoever holds the client's read token.
	rbuf  []byte // received bytes; rbuf[roff:] is not consumed yet
	roff  int
	msg   []byte    // data frames of a fragmented message so far
	msgOp ws.OpCode // its opcode, or 0 when none is being assembled
}

// errPeerClosed is returned by readMessage after the server's close frame.
var errPeerClosed = errors.New("closed by the bus")

// errTooBig is returned by readMessage for a message over the limit.
var errTooBig = errors.New("message from the bus is over the frame limit")

// dialConn connects to url and upgrades the connection to WebSocket.
func dialConn(ctx context.Context, url string, header http.Header, tlsConfig *tls.Config, maxMsg int64) (*clientConn, error) {
	status, why := 0, ""
	d := ws.Dialer{
		TLSConfig: tlsConfig,
		Header:    ws.HandshakeHeaderHTTP(header),
		OnStatusError: func(s int, _ []byte, r io.Reader) {
			status, why = s, refusalText(r)
		},
	}
	nc, br, _, err := d.Dial(ctx, url)
	if err != nil {
		if status == http.StatusUnauthorized {
			return nil, errUnauthorized
		}
		if why != "" {
			// The server's words name the limit that refused us.
			return nil, fmt.Errorf("%w: %s", err, why)
		}
		return nil, err
	}
	c := &clientConn{nc: nc, maxMsg: maxMsg, rbuf: make([]byte, 0, 4096)}
	if br != nil {
		// Frames the server sent right behind its handshake answer.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			c.rbuf = append(c.rbuf, b...)
		}
		ws.PutReader(br)
	}
	return c, nil
}

var errUnauthorized = errors.New("unauthorized")

// refusalText reads the body of a refused handshake's answer, bounded, as
// one line.
func refusalText(r io.Reader) string {
	resp, err := http.ReadResponse(bufio.NewReader(io.LimitReader(r, 16<<10)), nil)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	return strings.Join(strings.Fields(string(body)), " ")
}

// close closes the socket, saying goodbye first when it still can.
func (c *clientConn) close() { c.sayClose(ws.StatusNormalClosure) }

// writeMessage sends p as one text message. A write cut short by ctx leaves
// half a frame on the wire, so the connection is closed then; one that
// ends before a byte is written leaves it as it was.
func (c *clientConn) writeMessage(ctx context.Context, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if ctx.Done() != nil {
		defer interrupt.OnDone(ctx, c.nc.SetWriteDeadline)()
	}
	if n, err := c.writeFrameLocked(ws.OpText, p); err != nil {
		if n == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		_ = c.nc.Close()
		return fmt.Errorf("%w: %w", errBroken, err)
	}
	return nil
}

// errBroken says a write failed and closed the connection.
var errBroken = errors.New("connection broken")

// writeFrameLocked writes one masked frame, as a client must; c.wmu is held.
func (c *clientConn) writeFrameLocked(op ws.OpCode, p []byte) (int, error) {
	h := ws.Header{Fin: true, OpCode: op, Masked: true, Mask: ws.NewMask(), Length: int64(len(p))}
	b := bytes.NewBuffer(c.wbuf[:0])
	if err := ws.WriteHeader(b, h); err != nil {
		return 0, err
	}
	start := b.Len()
	b.Write(p)
	frame := b.Bytes()
	ws.Cipher(frame[start:], h.Mask, 0)
	c.wbuf = frame[:0]
	return c.nc.Write(frame)
}

// readMessage returns the next data message. When ctx ends first it
// returns ctx's error, and what was read of the next frame stays for the
// next reader. Control frames are answered on the way.
func (c *clientConn) readMessage(ctx context.Context) ([]byte, error) {
	for {
		msg, err := c.nextMessage()
		if err != nil || msg != nil {
			return msg, err
		}
		if err := c.fill(ctx); err != nil {
			return nil, err
		}
	}
}

// nextMessage consumes the whole frames in the buffer and returns the first
// complete data message, or nil when more bytes are needed.
func (c *clientConn) nextMessage() ([]byte, error) {
	for {
		h, hlen, ok, err := c.header()
		if err != nil || !ok {
			return nil, err
		}
		if h.Length > c.maxMsg || int64(len(c.msg))+h.Length > c.maxMsg {
			c.sayClose(ws.StatusMessageTooBig)
			return nil, fmt.Errorf("%w (%d bytes)", errTooBig, c.maxMsg)
		}
		end := c.roff + hlen + int(h.Length)
		if end > len(c.rbuf) {
			c.reserve(end - c.roff)
			return nil, nil
		}
		p := c.rbuf[c.roff+hlen : end]
		c.roff = end
		if h.Masked { // servers must not mask; be liberal
			ws.Cipher(p, h.Mask, 0)
		}
		if h.Rsv != 0 {
			c.sayClose(ws.StatusProtocolError)
			return nil, errors.New("frame from the bus uses an extension that was not agreed")
		}
		switch h.OpCode {
		case ws.OpPing:
			c.wmu.Lock()
			_, err := c.writeFrameLocked(ws.OpPong, p)
			c.wmu.Unlock()
			if err != nil {
				return nil, err
			}
		case ws.OpPong:
		case ws.OpClose:
			code, _ := ws.ParseCloseFrameData(p)
			c.sayClose(code)
			return nil, errPeerClosed
		case ws.OpText, ws.OpBinary:
			if c.msgOp != 0 {
				c.sayClose(ws.StatusProtocolError)
				return nil, errors.New("bus started a message inside another")
			}
			if h.Fin {
				return bytes.Clone(p), nil
			}
			c.msgOp = h.OpCode
			c.msg = append(c.msg[:0], p...)
		case ws.OpContinuation:
			if c.msgOp == 0 {
				c.sayClose(ws.StatusProtocolError)
				return nil, errors.New("bus continued a message it had not started")
			}
			c.msg = append(c.msg, p...)
			if h.Fin {
				m := c.msg
				c.msg, c.msgOp = nil, 0
				return m, nil
			}
		default:
			c.sayClose(ws.StatusProtocolError)
			return nil, fmt.Errorf("bus sent a frame of unknown opcode %d", h.OpCode)
		}
	}
}

// header parses the frame header at the start of the unconsumed bytes; ok
// is false when it is not all there yet.
func (c *clientConn) header() (h ws.Header, n int, ok bool, err error) {
	b := c.rbuf[c.roff:]
	if len(b) < 2 {
		return h, 0, false, nil
	}
	n = 2
	switch b[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b[1]&0x80 != 0 {
		n += 4
	}
	if len(b) < n {
		return h, 0, false, nil
	}
	h, err = ws.ReadHeader(bytes.NewReader(b[:n]))
	if err != nil {
		c.sayClose(ws.StatusProtocolError)
		return h, 0, false, fmt.Errorf("bad frame from the bus: %w", err)
	}
	return h, n, true, nil
}

// reserve makes room for a frame of n bytes from roff, moving the
// unconsumed bytes to the front.
func (c *clientConn) reserve(n int) {
	if c.roff > 0 {
		c.rbuf = c.rbuf[:copy(c.rbuf, c.rbuf[c.roff:])]
		c.roff = 0
	}
	if cap(c.rbuf) < n {
		c.rbuf = append(make([]byte, 0, max(n, 2*cap(c.rbuf))), c.rbuf...)
	}
}

// fill reads what the socket has into the buffer, waiting until ctx ends.
func (c *clientConn) fill(ctx context.Context) error {
	if c.roff == len(c.rbuf) {
		c.rbuf, c.roff = c.rbuf[:0], 0
	}
	if len(c.rbuf) == cap(c.rbuf) {
		c.reserve(len(c.rbuf) - c.roff + 4096)
	}
	if ctx.Done() != nil {
		defer interrupt.OnDone(ctx, c.nc.SetReadDeadline)()
	}
	n, err := c.nc.Read(c.rbuf[len(c.rbuf):cap(c.rbuf)])
	c.rbuf = c.rbuf[:len(c.rbuf)+n]
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return nil
}

// sayClose answers or starts the closing handshake with code, then closes
// the socket. The close frame is skipped when a write is in progress (it
// may be stuck on a peer that does not read) and gets a short deadline.
func (c *clientConn) sayClose(code ws.StatusCode) {
	if code.Empty() || code.IsProtocolReserved() {
		code = ws.StatusNormalClosure // 1005 and 1006 are never sent
	}
	c.closeOnce.Do(func() {
		if c.wmu.TryLock() {
			_ = c.nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = c.writeFrameLocked(ws.OpClose, ws.NewCloseFrameBody(code, ""))
			c.wmu.Unlock()
		}
		_ = c.nc.Close()
	})
}
