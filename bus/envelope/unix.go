package envelope

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/internal/layout"
)

// conn is one socket client.
type conn struct {
	nc      net.Conn
	out     *outbox
	lastSeq int64 // guarded by Broker.mu
	// created lists the sessions this connection created that may still
	// be open (Options.MaxSessionsPerConnection); guarded by Broker.mu.
	created []string

	wmu sync.Mutex // serializes taking from out and writing
	w   *bufio.Writer
}

// DefaultSocketPath is where clients look for the bus: ~/.weave/coord.sock.
func DefaultSocketPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the default bus socket: %w; pass a socket path instead", err)
	}
	return layout.HomeSocket(home), nil
}

// ListenUnix creates the Unix socket at path with mode 0600, creating its
// directory (0700) if needed. A socket file left by a dead process is
// replaced; a socket that a live process still serves is an error. Closing
// the listener removes the socket file if it is still this one.
func ListenUnix(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create socket directory %s: %w", dir, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; move it away or choose another socket path", path)
		}
		// A guard, not a timing assumption: a live server answers at once.
		probe, err := net.DialTimeout("unix", path, 2*time.Second)
		if err == nil {
			probe.Close()
			return nil, fmt.Errorf("socket %s is served by a running process; stop it or choose another socket path", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("probe existing socket %s: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("check socket path %s: %w", path, err)
	}

	// Bind inside a private directory and chmod before renaming into place,
	// so the socket is never reachable with a wider mode.
	tmp, err := os.MkdirTemp(dir, ".sock-")
	if err != nil {
		return nil, fmt.Errorf("create socket in %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	tmpPath := filepath.Join(tmp, "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmpPath, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(tmpPath, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod socket %s: %w", path, err)
	}
	if err := os.Rename(tmpPath, path); err != nil {
		l.Close()
		return nil, fmt.Errorf("place socket at %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("stat socket %s: %w", path, err)
	}
	return &unixListener{UnixListener: l, path: path, fi: fi}, nil
}

type unixListener struct {
	*net.UnixListener
	path string
	fi   os.FileInfo
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		// Only remove the file if nobody replaced it since.
		if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.fi) {
			os.Remove(l.path)
		}
	})
	return err
}

// ServeUnix listens on the socket at path (see ListenUnix) and serves until
// ctx ends.
func (b *Broker) ServeUnix(ctx context.Context, path string) error {
	l, err := ListenUnix(path)
	if err != nil {
		return err
	}
	return b.Serve(ctx, l)
}

// Serve accepts socket connections on l and speaks newline-delimited
// envelopes on each. It returns nil once ctx ends, or the error that broke
// Accept; either way it first closes l and every connection.
func (b *Broker) Serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	// Whatever ends Serve also ends its connections (cancel runs before
	// the Wait above).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		nc, err := l.Accept()
		if err != nil {
			l.Close()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept on %s: %w; restart the bus", l.Addr(), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.serveConn(ctx, nc)
		}()
	}
}

func (b *Broker) serveConn(ctx context.Context, nc net.Conn) {
	c := &conn{nc: nc, out: newOutbox(b.opts.QueueLen)}
	c.w = bufio.NewWriterSize(nc, 64<<10)
	c.out.onKill = func() { nc.Close() }
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	written := make(chan struct{})
	go c.writeLoop(written)

	r := bufio.NewReaderSize(nc, 64<<10)
	// The commands publish without waiting (see Broker.emit): the ctx is
	// marked once for all of them.
	cmdCtx := bus.NoWait(ctx)
	for {
		line, tooLong, err := readLine(r, b.opts.MaxFrameBytes)
		switch {
		case tooLong:
			c.out.pushQuiet(b.errorReply(Envelope{}, errorf(CodeTooLarge,
				"line longer than %d bytes was dropped; send smaller envelopes", b.opts.MaxFrameBytes)))
		case len(bytes.TrimSpace(line)) > 0:
			b.serveLine(cmdCtx, c, line)
		}
		// Send replies from here, with no hand-off to the writer on the
		// request path; while whole lines wait in the buffer (a pipelining
		// client), batch them.
		if !lineBuffered(r) || c.out.len() >= min(64, b.opts.QueueLen/2) {
			c.flush()
		}
		if err != nil {
			break
		}
	}
	// Stop routing to this connection, then let the writer flush replies
	// already queued (a client may half-close and still read).
	b.detach(c)
	c.out.finish()
	<-written
	nc.Close()
	if c.out.isSlow() {
		b.opts.Logger.Warn("disconnected a socket client that stopped reading",
			"queue", b.opts.QueueLen, "remote", nc.RemoteAddr())
	}
}

// lineBuffered reports whether a whole line is already in r's buffer.
func lineBuffered(r *bufio.Reader) bool {
	buf, _ := r.Peek(r.Buffered())
	return bytes.IndexByte(buf, '\n') >= 0
}

func (b *Broker) serveLine(ctx context.Context, c *conn, line []byte) {
	env, err := parseEnvelope(line)
	if err != nil {
		c.out.pushQuiet(b.errorReply(env, err))
		return
	}
	b.serve(ctx, c, env)
}

// parseEnvelope decodes one frame. On failure it still returns what it could
// learn of the envelope (its id and type) so the error reply correlates.
func parseEnvelope(data []byte) (Envelope, error) {
	var env Envelope
	err := unmarshalEnvelope(data, &env)
	if err == nil {
		return env, nil
	}
	var probe struct {
		ID   any `json:"id"`
		Type any `json:"type"`
		Src  any `json:"src"`
	}
	if !json.Valid(data) {
		return Envelope{}, errorf(CodeInvalidJSON, "frame is not valid JSON: %v; send one JSON envelope per line", err)
	}
	if json.Unmarshal(data, &probe) != nil {
		return Envelope{}, errorf(CodeInvalidRequest, "frame is JSON but not an envelope object; send {\"v\":1,\"type\":...}")
	}
	id, _ := probe.ID.(string)
	typ, _ := probe.Type.(string)
	src, _ := probe.Src.(string)
	return Envelope{ID: id, Type: typ, Src: src}, errorf(CodeInvalidRequest, "bad envelope: %v", err)
}

// readLine reads one '\n'-terminated line. Lines over max bytes are consumed
// and reported as tooLong instead of being returned.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		frag, err := r.ReadSlice('\n')
		if buf == nil && !tooLong && err == nil {
			// Common case: the whole line is in the reader's buffer.
			return frag, len(frag) > max+1, nil
		}
		if !tooLong {
			if len(buf)+len(frag) > max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, true, err
		}
		return buf, false, err
	}
}

// flush writes everything queued for c. It reports false when the
// connection is broken.
func (c *conn) flush() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	wrote := false
	for {
		batch := c.out.take()
		if len(batch) == 0 {
			break
		}
		for i := range batch {
			if err := writeEnvelope(c.w, &batch[i]); err != nil {
				c.out.kill()
				return false
			}
		}
		c.out.recycle(batch)
		wrote = true
	}
	if wrote && c.w.Flush() != nil {
		c.out.kill()
		return false
	}
	return true
}

// writeLoop writes what other goroutines push (events for the client's
// agents and streams).
func (c *conn) writeLoop(done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-c.out.notify:
			if !c.flush() {
				return
			}
		case <-c.out.dead:
			// A slow consumer's socket is already closed by kill; it
			// reconnects and resumes with events.stream after its last seq.
			return
		case <-c.out.finished:
			c.flush()
			return
		}
	}
}
