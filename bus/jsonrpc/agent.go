package jsonrpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/internal/proc"
)

// launcher is the default handler: it starts the agent command for a topic
// nobody is subscribed to and waits for the agent to subscribe.
type launcher struct {
	s *Server

	mu       sync.Mutex
	starting map[string]*start // by topic; one start per topic at a time
	procs    map[*exec.Cmd]struct{}
	stopped  bool
	wg       sync.WaitGroup
}

type start struct {
	done chan struct{}
	err  error
}

func newLauncher(s *Server) *launcher {
	return &launcher{s: s, starting: make(map[string]*start), procs: make(map[*exec.Cmd]struct{})}
}

// handles reports whether the default handler starts agents for topic.
// System topics (dead letters, lifecycle events) never start one.
func (l *launcher) handles(topic string) bool {
	// Hook, loop and model-event topics are the host's: a message with no
	// subscriber there means no peer hooks in or watches, not that an
	// agent should be started. (model: is host/chat's EventsTopicPrefix.)
	for _, p := range []string{"system:", "hook:", "loop:", "model:"} {
		if strings.HasPrefix(topic, p) {
			return false
		}
	}
	return len(l.s.opts.AgentCommand) > 0
}

// ensure starts an agent for topic, or joins a start already under way,
// and returns once the agent has subscribed to a pattern matching topic.
func (l *launcher) ensure(ctx context.Context, topic string) error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return fmt.Errorf("no subscriber on %s and the bus is shutting down", topic)
	}
	if st, ok := l.starting[topic]; ok {
		l.mu.Unlock()
		select {
		case <-st.done:
			return st.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	st := &start{done: make(chan struct{})}
	l.starting[topic] = st
	l.mu.Unlock()

	st.err = l.launch(ctx, topic)
	l.mu.Lock()
	delete(l.starting, topic)
	l.mu.Unlock()
	close(st.done)
	return st.err
}

func (l *launcher) launch(ctx context.Context, topic string) error {
	opts := l.s.opts
	w, unwait := l.s.waitFor(topic)
	defer unwait()
	id := newAgentID()
	cmd := exec.Command(opts.AgentCommand[0], opts.AgentCommand[1:]...)
	cmd.Dir = opts.Workspace
	cmd.Env = agentEnv(opts, topic, id)
	cmd.SysProcAttr = proc.ChildAttr()
	out := opts.AgentOutput
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("default handler for %s: start agent %q: %w (check bus.agent_command)", topic, opts.AgentCommand[0], err)
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("no subscriber on %s and the bus is shutting down", topic)
	}
	l.procs[cmd] = struct{}{}
	l.wg.Add(1)
	l.mu.Unlock()
	exited := make(chan error, 1)
	go func() {
		defer l.wg.Done()
		err := cmd.Wait()
		l.mu.Lock()
		delete(l.procs, cmd)
		l.mu.Unlock()
		exited <- err
	}()
	timer := time.NewTimer(opts.AgentStartTimeout)
	defer timer.Stop()
	select {
	case <-w.ch:
		return nil
	case err := <-exited:
		return fmt.Errorf("default handler for %s: agent %s exited before subscribing (%v); run bus.agent_command by hand to see why", topic, id, err)
	case <-timer.C:
		_ = cmd.Process.Kill()
		return fmt.Errorf("default handler for %s: agent %s did not subscribe within %s; it must connect to WEAVE_BUS_URL and subscribe to WEAVE_DEFAULT_TOPIC", topic, id, opts.AgentStartTimeout)
	case <-ctx.Done():
		return ctx.Err()
	case <-l.s.ctx.Done():
		return fmt.Errorf("no subscriber on %s and the bus is shutting down", topic)
	}
}

// stopAll kills the agents the server started and waits for them.
func (l *launcher) stopAll() {
	l.mu.Lock()
	l.stopped = true
	for cmd := range l.procs {
		_ = cmd.Process.Kill()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// agentEnv is an explicit environment: what a plugin gets of ours (the
// plugin policy of package proc: PATH, HOME, locale, temp dir, non-secret
// WEAVE_*), Options.AgentEnv, and the agent's identity under both the
// WEAVE_ and the protocol's BUB_ names.
func agentEnv(opts Options, topic, id string) []string {
	env := proc.Env(proc.Plugin, proc.EnvOptions{Set: opts.AgentEnv})
	for _, prefix := range []string{"WEAVE_", "BUB_"} {
		env = append(env,
			prefix+"WORKSPACE="+opts.Workspace,
			prefix+"DEFAULT_TOPIC="+topic,
			prefix+"AGENT_ID="+id,
			prefix+"BUS_URL="+opts.BusURL,
		)
	}
	if opts.Token != "" {
		env = append(env, "WEAVE_BUS_TOKEN="+opts.Token)
	}
	return env
}

func newAgentID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "agent-" + hex.EncodeToString(b[:])
}
