package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/plugins"
)

// restartWait is the longest a call waits for a restarting server.
const restartWait = 30 * time.Second

// server is one configured server and its connection.
type server struct {
	m    *Manager
	spec Spec

	mu    sync.Mutex
	state string
	err   error
	sess  *sdk.ClientSession
	link  *stdioLink // stdio servers only
	tools []Tool
	// byName maps mcp__<server>__<tool> to the server's own tool name.
	byName map[string]string
	// restarts counts restarts; failures, those since a call was answered.
	restarts, failures int
	// ready is closed when the server leaves starting or restarting.
	ready chan struct{}
}

// connect starts the server, shakes hands and lists its tools.
func (s *server) connect(ctx context.Context) error {
	// The session lives in the context it connects with (an SSE stream is
	// a request made then), so that context is the manager's, ended by
	// Close; the start's bound and the caller's context end it only until
	// the server is ready.
	live, cancel := context.WithCancel(s.m.ctx)
	timer := time.AfterFunc(s.m.opts.StartTimeout, cancel)
	stopCaller := context.AfterFunc(ctx, cancel)
	ok := false
	defer func() {
		timer.Stop()
		stopCaller()
		if !ok {
			cancel()
		}
	}()
	ctx = live
	var (
		t    sdk.Transport
		link *stdioLink
		err  error
	)
	switch s.spec.Type {
	case config.MCPHTTP:
		t, err = s.m.httpTransport(s.spec)
	case config.MCPSSE:
		t, err = s.m.sseTransport(s.spec)
	default:
		t, link, err = s.m.startStdio(ctx, s.spec)
	}
	if err != nil {
		return err
	}
	sess, err := s.m.client.Connect(ctx, t, nil)
	if err != nil {
		if link != nil {
			link.stop(time.Second)
			if tail := strings.TrimSpace(link.stderr.String()); tail != "" {
				err = fmt.Errorf("%w; it wrote: %s", err, lastLine(tail))
			}
		}
		return fmt.Errorf("connect: %w", err)
	}
	tools, err := listTools(ctx, s.spec.Name, sess)
	if err != nil {
		_ = sess.Close()
		if link != nil {
			link.stop(time.Second)
		}
		return fmt.Errorf("list tools: %w", err)
	}
	s.mu.Lock()
	if s.m.isClosed() {
		s.mu.Unlock()
		_ = sess.Close()
		if link != nil {
			link.stop(time.Second)
		}
		return errors.New("the run is ending")
	}
	s.sess, s.link, s.tools, s.state, s.err = sess, link, tools, StateReady, nil
	s.byName = make(map[string]string, len(tools))
	for _, tl := range tools {
		s.byName[tl.Name] = tl.Tool
	}
	close(s.ready)
	s.mu.Unlock()
	s.m.setTools(s.spec.Name, tools)
	ok = true
	s.m.wg.Add(1)
	go func() {
		defer cancel()
		s.watch(sess)
	}()
	return nil
}

// listTools lists every tool of the server, as the model will know them.
func listTools(ctx context.Context, server string, sess *sdk.ClientSession) ([]Tool, error) {
	var out []Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		out = append(out, Tool{Name: plugins.MCPToolName(server, t.Name), Server: server, Tool: t.Name, Description: desc, Schema: schema})
	}
	return out, nil
}

// watch waits for the session to end and restarts the server, with
// backoff, unless the run is ending.
func (s *server) watch(sess *sdk.ClientSession) {
	defer s.m.wg.Done()
	err := sess.Wait()
	if s.m.isClosed() {
		return
	}
	s.mu.Lock()
	if s.sess != sess {
		s.mu.Unlock()
		return
	}
	link := s.link
	s.sess, s.link, s.state, s.ready = nil, nil, StateRestarting, make(chan struct{})
	s.err = fmt.Errorf("the server stopped: %v", errOr(err, "its connection closed"))
	if link != nil {
		if tail := strings.TrimSpace(link.stderr.String()); tail != "" {
			s.err = fmt.Errorf("%w; it wrote: %s", s.err, lastLine(tail))
		}
	}
	s.mu.Unlock()
	if link != nil {
		link.stop(2 * time.Second)
	}
	s.m.log.Warn("mcp server stopped; restarting", "server", s.spec.Name, "err", err)
	backoff := 100 * time.Millisecond
	for {
		s.mu.Lock()
		s.failures++
		over := s.failures > s.m.opts.MaxRestarts
		s.mu.Unlock()
		if over {
			s.fail(fmt.Errorf("gave up after %d restarts: %v", s.m.opts.MaxRestarts, s.lastErr()))
			return
		}
		select {
		case <-s.m.ctx.Done():
			return
		case <-time.After(backoff):
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
		err := s.connect(s.m.ctx)
		if err == nil {
			s.m.log.Info("mcp server restarted", "server", s.spec.Name)
			return
		}
		if s.m.isClosed() {
			return
		}
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		s.m.log.Warn("mcp server restart failed", "server", s.spec.Name, "err", err)
		backoff = min(backoff*2, 10*time.Second)
	}
}

// session returns the live session and the server's name of tool, waiting
// for a restart; else a result that names the server.
func (s *server) session(ctx context.Context, tool string) (*sdk.ClientSession, string, plugins.ToolResult) {
	wait, cancel := context.WithTimeout(ctx, restartWait)
	defer cancel()
	for {
		s.mu.Lock()
		state, sess, ready, err := s.state, s.sess, s.ready, s.err
		own, known := s.byName[tool]
		s.mu.Unlock()
		switch state {
		case StateReady:
			if !known {
				return nil, "", failure("MCP server %s has no tool %s", s.spec.Name, strings.TrimPrefix(tool, plugins.MCPPrefix+s.spec.Name+"__"))
			}
			return sess, own, plugins.ToolResult{}
		case StateStarting, StateRestarting:
			select {
			case <-ready:
				continue
			case <-wait.Done():
				return nil, "", failure("MCP server %s is %s and did not come back in time: %v", s.spec.Name, state, errOr(err, "no answer"))
			}
		default:
			return nil, "", failure("MCP server %s is %s: %v", s.spec.Name, state, errOr(err, "stopped"))
		}
	}
}

// dead reports whether sess is no longer the server's live session.
func (s *server) dead(sess *sdk.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess != sess
}

// awaitDead waits, at most d, until the watcher has seen sess end.
func (s *server) awaitDead(sess *sdk.ClientSession, d time.Duration) {
	deadline := time.Now().Add(d)
	for !s.dead(sess) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// answered resets the restart budget: the server works.
func (s *server) answered() {
	s.mu.Lock()
	s.failures = 0
	s.mu.Unlock()
}

// fail marks the server failed; its tools are no longer offered.
func (s *server) fail(err error) {
	s.mu.Lock()
	s.state, s.err, s.tools, s.byName = StateFailed, err, nil, nil
	select {
	case <-s.ready:
	default:
		close(s.ready)
	}
	s.mu.Unlock()
	s.m.setTools(s.spec.Name, nil)
}

func (s *server) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// close ends the session and stops the server's process group.
func (s *server) close() {
	s.mu.Lock()
	sess, link := s.sess, s.link
	s.sess, s.link, s.state = nil, nil, StateStopped
	s.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
	if link != nil {
		link.stop(2 * time.Second)
	}
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// setTools replaces server's tools in the manager's index.
func (m *Manager) setTools(server string, tools []Tool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, t := range m.tools {
		if t.Server == server {
			delete(m.tools, name)
		}
	}
	for _, t := range tools {
		m.tools[t.Name] = t
	}
}

func errOr(err error, s string) any {
	if err == nil {
		return s
	}
	return err
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
