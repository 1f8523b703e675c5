package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/pluginhost"
)

// Entry is a plugin the supervisor can start.
type Entry struct {
	// Name identifies the plugin in logs, errors and config; it is unique.
	Name string
	// Path is the executable; Args are passed to it.
	Path string
	Args []string
	// Env is added to the plugin's explicit environment.
	Env map[string]string
	// Dir is the working directory; empty means the host's.
	Dir string
	// Kind, when set, is checked against what the plugin says it is.
	Kind plugins.Kind
	// Source says where the entry came from: "project", "user", "config"
	// or "builtin".
	Source string
	// Optional marks a plugin a run may go on without when it cannot start
	// or describe itself (config plugins: optional: true).
	Optional bool
}

// Options tune a Supervisor. Zero values take the defaults.
type Options struct {
	// Logger receives the supervisor's log and the plugins' logs, each
	// under plugin=<name>.
	Logger *slog.Logger
	// StartTimeout bounds a plugin's start, up to its manifest. Default 10s.
	StartTimeout time.Duration
	// MaxRestarts is how many times a plugin that crashed or failed to start
	// is started again before it is disabled. Default 3.
	MaxRestarts int
	// BackoffMin and BackoffMax bound the wait before a restart, which
	// doubles with each consecutive restart. Defaults 100ms and 5s.
	BackoffMin, BackoffMax time.Duration
	// StableAfter is how long a plugin must run for its restart count to
	// start again from zero. Default 1m.
	StableAfter time.Duration
	// Environ is the base of every plugin's explicit environment, already
	// narrowed by the host's policy (the host passes proc.Env(proc.Plugin):
	// PATH, HOME, locale, non-secret WEAVE_* and little else). The
	// supervisor adds the plugin's name, the host's PID and the entry's
	// env. Nil means an empty base.
	Environ []string
	// StderrLines is how many of a plugin's last stderr lines are kept for
	// error messages. Default 50.
	StderrLines int
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	if o.MaxRestarts <= 0 {
		o.MaxRestarts = 3
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = 100 * time.Millisecond
	}
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = max(5*time.Second, o.BackoffMin)
	}
	if o.StableAfter <= 0 {
		o.StableAfter = time.Minute
	}
	if o.StderrLines <= 0 {
		o.StderrLines = 50
	}
}

// ErrDisabled is wrapped by the error of every call to a plugin the
// supervisor gave up restarting.
var ErrDisabled = errors.New("disabled")

// errSupervisorClosed is returned once Close has begun.
var errSupervisorClosed = errors.New("plugin supervisor is shut down")

// Supervisor runs plugins as subprocesses: it starts each on first use,
// restarts one that crashed (a new process each time, with backoff, up to a
// limit, then disables it), and kills them all on Close. A plugin's crash is
// an error for the calls it affects, never for the host. It is safe for
// concurrent use.
type Supervisor struct {
	opts Options

	mu      sync.Mutex
	plugins map[string]*supervised
	seq     uint64
	closed  bool
}

// New returns a supervisor for entries. Nothing is started.
func New(opts Options, entries ...Entry) (*Supervisor, error) {
	opts.setDefaults()
	s := &Supervisor{opts: opts, plugins: make(map[string]*supervised)}
	for _, e := range entries {
		if err := s.Add(e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add adds a plugin entry.
func (s *Supervisor) Add(e Entry) error {
	if e.Name == "" {
		return fmt.Errorf("plugin entry for %q has no name", e.Path)
	}
	if e.Path == "" {
		return fmt.Errorf("plugin %q has no path: set the executable to run", e.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSupervisorClosed
	}
	if old, dup := s.plugins[e.Name]; dup {
		return fmt.Errorf("plugin %q is listed twice (%s and %s): rename one", e.Name, old.entry.Path, e.Path)
	}
	logger := s.opts.Logger.With("plugin", e.Name)
	s.plugins[e.Name] = &supervised{
		s:      s,
		entry:  e,
		logger: logger,
		stderr: newPluginStderr(logger, s.opts.StderrLines),
		lock:   make(chan struct{}, 1),
	}
	return nil
}

// Entries returns the plugin entries, sorted by name.
func (s *Supervisor) Entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry, 0, len(s.plugins))
	for _, name := range slices.Sorted(maps.Keys(s.plugins)) {
		out = append(out, s.plugins[name].entry)
	}
	return out
}

func (s *Supervisor) lookup(name string) (*supervised, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.plugins[name]
	if !ok {
		return nil, fmt.Errorf("no plugin named %q (have: %s)", name, strings.Join(slices.Sorted(maps.Keys(s.plugins)), ", "))
	}
	return p, nil
}

// Hook returns the plugin name as a Hook. Calls start the plugin if needed.
func (s *Supervisor) Hook(name string) plugins.Hook { return supervisedHook{s, name} }

// Agent returns the plugin name as an Agent. Calls start the plugin if
// needed; the Host given to Handle serves the calls the plugin makes back.
func (s *Supervisor) Agent(name string) plugins.Agent { return supervisedAgent{s, name} }

// Running reports whether the plugin name has a live process now.
func (s *Supervisor) Running(name string) bool {
	p, err := s.lookup(name)
	if err != nil {
		return false
	}
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return p.inst != nil && !p.inst.gone()
}

// Manifest starts the plugin if needed and returns its manifest.
func (s *Supervisor) Manifest(ctx context.Context, name string) (plugins.Manifest, error) {
	var m plugins.Manifest
	err := s.call(ctx, name, "Describe", func(inst *instance) error {
		m = inst.manifest
		return nil
	})
	return m, err
}

// Status is a plugin's state in the supervisor.
type Status struct {
	Name     string
	Running  bool
	PID      int
	Restarts int
	Manifest plugins.Manifest
	// Disabled is why the plugin was disabled, if it was.
	Disabled string
}

// Status reports every plugin, sorted by name.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	ps := slices.Collect(maps.Values(s.plugins))
	s.mu.Unlock()
	out := make([]Status, 0, len(ps))
	for _, p := range ps {
		p.stateMu.Lock()
		st := Status{Name: p.entry.Name, Restarts: p.restarts}
		if p.inst != nil && !p.inst.gone() {
			st.Running, st.PID, st.Manifest = true, p.inst.pid, p.inst.manifest
		}
		if p.disabled != nil {
			st.Disabled = p.disabled.Error()
		}
		p.stateMu.Unlock()
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Close kills every running plugin, the most recently started first, and
// refuses to start any more. A plugin gets a moment to exit cleanly; when ctx
// ends, those left are killed outright. Close is the single shutdown path and
// may be called more than once.
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	ps := slices.Collect(maps.Values(s.plugins))
	s.mu.Unlock()
	slices.SortFunc(ps, func(a, b *supervised) int { return b.startSeq() - a.startSeq() })
	var errs []error
	for _, p := range ps {
		if err := p.stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// call runs f on a started instance of the plugin name, and turns a crash
// during f into an error that says what happened and what comes next.
func (s *Supervisor) call(ctx context.Context, name, method string, f func(*instance) error) error {
	p, err := s.lookup(name)
	if err != nil {
		return err
	}
	inst, err := p.get(ctx)
	if err != nil {
		return err
	}
	err = f(inst)
	if errors.Is(err, plugins.ErrPluginUnavailable) {
		p.stateMu.Lock()
		if p.inst == inst && p.failed == nil {
			p.failed = err
		}
		p.stateMu.Unlock()
		inst.dead.Store(true)
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return fmt.Errorf("%w (weave is shutting down)", err)
		}
		// What it printed (a panic's trace, say) is detail for the log;
		// the error stays one line a person can read.
		p.logger.Warn("plugin died during a call", "method", method, "error", err, "stderr", p.stderr.tailText())
		return fmt.Errorf("%w; weave restarts it on the next call (its last output is in the log)", err)
	}
	return err
}

// supervised is one plugin entry and its current process.
type supervised struct {
	s      *Supervisor
	entry  Entry
	logger *slog.Logger
	stderr *pluginStderr

	// lock serialises starts and stops; it is a channel so that waiting for
	// it respects a context.
	lock chan struct{}

	// stateMu guards the fields below for readers that do not hold lock.
	stateMu  sync.Mutex
	inst     *instance
	restarts int
	failed   error // why the last instance failed to start or died
	disabled error
	// binary is the plugin's executable as it was when the plugin was
	// disabled: a new file there (a fixed build) earns it a new start.
	binary fs.FileInfo
}

// reenable clears a disabled plugin whose executable changed since it was
// disabled, so that the next call starts it afresh. p.stateMu is held.
func (p *supervised) reenable() {
	if p.disabled == nil || p.binary == nil {
		return
	}
	now, err := os.Stat(p.entry.Path)
	if err != nil || sameBinary(p.binary, now) {
		return
	}
	p.logger.Info("plugin executable changed since it was disabled: trying it again", "path", p.entry.Path)
	p.disabled, p.binary, p.failed, p.restarts = nil, nil, nil, 0
}

// sameBinary reports whether two looks at an executable saw the same file,
// unchanged: a rebuild either replaces the file (a new inode) or rewrites
// it (a new size or modification time).
func sameBinary(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func (p *supervised) acquire(ctx context.Context) error {
	select {
	case p.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("plugin %q: waiting for it to start: %w", p.entry.Name, ctx.Err())
	}
}

func (p *supervised) release() { <-p.lock }

func (p *supervised) startSeq() int {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if p.inst == nil {
		return 0
	}
	return int(p.inst.seq)
}

// get returns the running instance, starting one if there is none.
func (p *supervised) get(ctx context.Context) (*instance, error) {
	p.stateMu.Lock()
	p.reenable()
	inst, disabled := p.inst, p.disabled
	p.stateMu.Unlock()
	if disabled != nil {
		return nil, disabled
	}
	if inst != nil && !inst.gone() {
		return inst, nil
	}

	if err := p.acquire(ctx); err != nil {
		return nil, err
	}
	defer p.release()

	p.stateMu.Lock()
	inst = p.inst
	if p.disabled != nil {
		p.stateMu.Unlock()
		return nil, p.disabled
	}
	if inst != nil && !inst.gone() {
		p.stateMu.Unlock()
		return inst, nil
	}
	died := inst
	if died != nil {
		// It died since it was started: count a restart, unless it had
		// been running long enough to be called stable.
		p.inst = nil
		if time.Since(died.started) >= p.s.opts.StableAfter {
			p.restarts = 0
		}
		if p.failed == nil {
			p.failed = errors.New("the plugin process exited")
		}
	}
	failed := p.failed
	var n int
	if failed != nil {
		p.restarts++
		n = p.restarts
		if n > p.s.opts.MaxRestarts {
			p.disabled = fmt.Errorf("plugin %q (%s) was %w after %d restarts; last failure: %v; fix it: weave tries it again once its executable changes; %s",
				p.entry.Name, p.entry.Path, ErrDisabled, p.s.opts.MaxRestarts, failed, p.stderr.tailText())
			disabled = p.disabled
			p.binary, _ = os.Stat(p.entry.Path)
		}
	}
	p.stateMu.Unlock()

	if died != nil {
		died.kill()
		p.logger.Warn("plugin exited", "pid", died.pid, "ran", time.Since(died.started).Round(time.Millisecond))
	}
	if disabled != nil {
		p.logger.Error("plugin disabled", "restarts", p.s.opts.MaxRestarts, "last_failure", failed)
		return nil, disabled
	}
	if failed != nil {
		if err := p.backoff(ctx, n); err != nil {
			return nil, err
		}
	}

	inst, err := p.start()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if err != nil {
		p.failed = err
		if errors.Is(err, errSupervisorClosed) {
			return nil, err
		}
		return nil, fmt.Errorf("plugin %q (%s) failed to start: %w; %s", p.entry.Name, p.entry.Path, err, p.stderr.tailText())
	}
	p.inst, p.failed = inst, nil
	return inst, nil
}

func (p *supervised) backoff(ctx context.Context, n int) error {
	d := p.s.opts.BackoffMin << min(n-1, 20)
	if d > p.s.opts.BackoffMax || d <= 0 {
		d = p.s.opts.BackoffMax
	}
	p.logger.Info("restarting plugin", "attempt", n, "after", d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("plugin %q: waiting to restart it: %w", p.entry.Name, ctx.Err())
	}
}

// start starts a new plugin process and reads its manifest. go-plugin
// clients cannot be started twice, so every start makes a new one.
func (p *supervised) start() (*instance, error) {
	s := p.s
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errSupervisorClosed
	}
	s.seq++
	seq := s.seq
	s.mu.Unlock()

	e := p.entry
	cmd := exec.Command(e.Path, e.Args...)
	cmd.Env = pluginEnv(s.opts.Environ, e)
	cmd.Dir = e.Dir
	cmd.SysProcAttr = pluginSysProcAttr()
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pluginhost.Handshake,
		Plugins:          pluginhost.PluginSet(e.Name, plugins.ServeConfig{}),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  pluginhost.DialOptions(),
		StartTimeout:     s.opts.StartTimeout,
		Stderr:           p.stderr,
		// After the handshake, go-plugin carries what plugin code prints to
		// os.Stdout and os.Stderr over gRPC; it goes to the same log.
		SyncStdout: p.stderr,
		SyncStderr: p.stderr,
		// The plugin's stderr is read by p.stderr; go-plugin's own reader
		// is off because it trusts the shape of the JSON it parses.
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard}),
	})
	started := time.Now()
	inst, err := p.connect(client)
	if err != nil {
		client.Kill()
		err = startFailure(err, s.opts.StartTimeout)
		p.logger.Error("plugin failed to start", "error", err)
		return nil, err
	}
	inst.seq, inst.started = seq, started
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		inst.kill()
		return nil, errSupervisorClosed
	}
	p.logger.Info("plugin started", "pid", inst.pid, "kind", inst.manifest.Kind, "version", inst.manifest.Version,
		"took", time.Since(started).Round(time.Microsecond))
	return inst, nil
}

func (p *supervised) connect(client *goplugin.Client) (*instance, error) {
	rpc, err := client.Client()
	if err != nil {
		return nil, err
	}
	inst := &instance{client: client}
	if rc := client.ReattachConfig(); rc != nil {
		inst.pid = rc.Pid
	}
	conn, err := pluginhost.Dispense(rpc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.s.opts.StartTimeout)
	defer cancel()
	m, err := conn.Describe(ctx)
	if err != nil {
		return nil, err
	}
	if p.entry.Kind != "" && m.Kind != p.entry.Kind {
		return nil, fmt.Errorf("it is a %s plugin, but its entry says kind %q", m.Kind, p.entry.Kind)
	}
	inst.conn, inst.manifest = conn, m
	return inst, nil
}

// startFailure rewrites go-plugin's start errors into ones a user can act on.
func startFailure(err error, timeout time.Duration) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("it did not complete the plugin handshake within %s (is it a weave plugin that calls plugins.Serve?)", timeout)
	case strings.Contains(msg, "plugin exited before we could connect"),
		strings.Contains(msg, "Failed to read any lines from plugin's stdout"):
		return errors.New("it exited before completing the plugin handshake")
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		return fmt.Errorf("it wrote something other than the plugin handshake to stdout (a plugin must not write to stdout): %q",
			strings.TrimPrefix(firstLine(msg), "Unrecognized remote plugin message: "))
	}
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// stop kills the running instance, waiting for ctx at most.
func (p *supervised) stop(ctx context.Context) error {
	if err := p.acquire(ctx); err != nil {
		// A start is under way and ctx is over: kill what we can see.
		p.stateMu.Lock()
		inst := p.inst
		p.stateMu.Unlock()
		if inst != nil {
			inst.forceKill()
		}
		return err
	}
	defer p.release()
	p.stateMu.Lock()
	inst := p.inst
	p.inst = nil
	p.stateMu.Unlock()
	if inst == nil {
		return nil
	}
	done := make(chan struct{})
	go func() {
		inst.kill()
		close(done)
	}()
	select {
	case <-done:
		p.logger.Debug("plugin stopped", "pid", inst.pid)
		return nil
	case <-ctx.Done():
		inst.forceKill()
		return fmt.Errorf("plugin %q did not exit in time and was killed: %w", p.entry.Name, ctx.Err())
	}
}

// instance is one plugin process.
type instance struct {
	client   *goplugin.Client
	conn     *pluginhost.Conn
	manifest plugins.Manifest
	pid      int
	seq      uint64
	started  time.Time
	dead     atomic.Bool
}

func (i *instance) gone() bool { return i.dead.Load() || i.client.Exited() }

func (i *instance) kill() { i.client.Kill() }

func (i *instance) forceKill() {
	if i.pid <= 0 {
		return
	}
	if p, err := os.FindProcess(i.pid); err == nil {
		_ = p.Kill() // SIGKILL on unix
		_ = p.Release()
	}
}

// pluginEnv is a plugin's explicit environment: the base the host chose by
// its policy (Options.Environ), what the host tells every plugin, and the
// entry's own variables.
func pluginEnv(base []string, e Entry) []string {
	env := slices.Clip(slices.Clone(base))
	env = append(env,
		plugins.EnvPluginName+"="+e.Name,
		pluginhost.EnvHostPID+"="+strconv.Itoa(os.Getpid()),
	)
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		env = append(env, k+"="+e.Env[k])
	}
	return env
}

type supervisedHook struct {
	s    *Supervisor
	name string
}

func (h supervisedHook) Info(ctx context.Context) (plugins.Info, error) {
	var info plugins.Info
	err := h.s.call(ctx, h.name, "Info", func(inst *instance) error {
		var err error
		info, err = inst.conn.Hook().Info(ctx)
		return err
	})
	return info, err
}

func (h supervisedHook) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	var d plugins.Decision
	err := h.s.call(ctx, h.name, "Handle", func(inst *instance) error {
		var err error
		d, err = inst.conn.Hook().Handle(ctx, ev)
		return err
	})
	return d, err
}

type supervisedAgent struct {
	s    *Supervisor
	name string
}

func (a supervisedAgent) Info(ctx context.Context) (plugins.Info, error) {
	var info plugins.Info
	err := a.s.call(ctx, a.name, "Info", func(inst *instance) error {
		var err error
		info, err = inst.conn.Agent().Info(ctx)
		return err
	})
	return info, err
}

func (a supervisedAgent) Handle(ctx context.Context, host plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	var resp plugins.AgentResponse
	err := a.s.call(ctx, a.name, "Handle", func(inst *instance) error {
		var err error
		resp, err = inst.conn.Agent().Handle(ctx, host, req)
		return err
	})
	return resp, err
}

// Interface guards.
var (
	_ plugins.Hook  = supervisedHook{}
	_ plugins.Agent = supervisedAgent{}
)
