package mcp

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weavehq/weave/internal/proc"
)

// stdioLink is a stdio server started in its own process group through the
// host's proc.Set: stopped with the run, and everything it started with it.
type stdioLink struct {
	group  *proc.Group
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tail
	exited chan struct{}
}

// startStdio starts the server's command and returns the transport over its
// stdin and stdout.
func (m *Manager) startStdio(ctx context.Context, s Spec) (sdk.Transport, *stdioLink, error) {
	command, err := m.expand(s.Command)
	if err != nil {
		return nil, nil, fmt.Errorf("command: %w", err)
	}
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		if args[i], err = m.expand(a); err != nil {
			return nil, nil, fmt.Errorf("args[%d]: %w", i, err)
		}
	}
	set := make([]string, 0, len(s.Env))
	for _, k := range sortedKeys(s.Env) {
		v, err := m.expand(s.Env[k])
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", k, err)
		}
		set = append(set, k+"="+v)
	}
	cmd := exec.Command(command, args...)
	cmd.Dir = m.opts.Project
	// A command hook's environment: the person's, less weave's own
	// credentials and the model's key, plus the entry's env.
	cmd.Env = proc.Env(proc.CommandHook, proc.EnvOptions{Environ: m.opts.Environ, Hide: m.opts.Hide, Set: set})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	l := &stdioLink{stdin: stdin, stdout: stdout, stderr: &tail{max: 4 << 10}, exited: make(chan struct{})}
	cmd.Stderr = l.stderr
	// Something the server left running that holds stderr must not hold
	// the wait.
	cmd.WaitDelay = time.Second
	g, err := m.opts.Procs.Start(cmd, "mcp server "+s.Name)
	if err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", command, err)
	}
	l.group = g
	go func() {
		// Wait reaps the server; when the manager closes, it runs the kill
		// sequence on the whole group.
		_ = g.Wait(m.ctx)
		close(l.exited)
	}()
	_ = ctx
	return &sdk.IOTransport{Reader: stdout, Writer: stdin}, l, nil
}

// stop ends the server: stdin closed (the spec's polite way), then the
// group's kill sequence, waiting at most wait.
func (l *stdioLink) stop(wait time.Duration) {
	_ = l.stdin.Close()
	select {
	case <-l.exited:
		return
	case <-time.After(200 * time.Millisecond):
	}
	l.group.Stop()
	select {
	case <-l.exited:
	case <-time.After(wait):
	}
}

// tail keeps the last bytes a server wrote to stderr, for the message when
// it fails.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
