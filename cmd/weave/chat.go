package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

type chatOptions struct {
	*globalOptions
	Streams *Streams
	Prompt  string
	Agent   string
	JSON    bool
	// Resume continues a session: its id, or resumeLatest.
	Resume string
	// Bus joins a bus (ws:// or nats://); "" opens none.
	Bus string
	// agentSet says --agent was given, which wins over a resumed
	// session's agent.
	agentSet bool
	// interactive is set when stdin is a terminal and there is no -p.
	interactive bool
	// Ask says who answers permission questions.
	Ask askOptions
	// Budget is --budget: what the chat may spend, as written.
	Budget string
}

// resumeLatest is --resume given without an id.
const resumeLatest = "latest"

func newCmdChat(g *globalOptions, s *Streams, runF func(context.Context, *chatOptions) error) *cobra.Command {
	opts := &chatOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "chat [-p PROMPT] [--resume [ID]]",
		Short: "Talk with an agent (Loom by default): interactively, or one prompt with -p",
		Long: `Talk with an agent: it thinks with the configured model (model.provider,
model.name), uses the tools of its capability row through the capability gate
and the hooks, may delegate (Loom hands work to Thread, Pattern and the
others), and its answer streams to stdout as the model writes it. Tool calls
are shown on stderr as they happen.

On a terminal, weave chat is a conversation: type a message and press Enter;
/help lists the slash commands (/start-work, /plan, /status, /agents,
/compact, /exit) and the project's and your command files (.weave/commands/,
.claude/commands/: /name args, also with -p "/name args"). The prompt edits
the line (arrows, Home/End, Ctrl-A/E/K/U/W), recalls this project's earlier
messages (Up/Down), and goes on to a new line of the same message after a
trailing backslash or Alt-Enter. With colour on, the answer's markdown is
rendered for the terminal.
A tool call the permission rules ask about (the permissions section, see
docs/permissions.md) is put to you: y runs it once, a for the session, any
other answer refuses it and reaches the agent as the reason. With -p nobody
is asked and such a call is refused, unless --ask-via bus puts it to a peer.
Ctrl-C interrupts the current answer; Ctrl-C again, Ctrl-C at the prompt, or
Ctrl-D ends the chat. The session is saved in .weave/sessions/ either way and
` + "`weave chat --resume ID`" + ` continues it (without an ID, the latest one).

With -p, or a prompt piped on stdin, the agent answers once and weave exits.

Exit codes: 0 answered, 1 the agent or the model failed, 2 usage, 3 the
--budget would be crossed.`,
		Example: `  weave chat
  weave chat -p "what does this project test with?"
  git diff | weave chat -p "review this diff"
  weave chat --resume                      # the latest session
  weave chat --resume chat-1a2b3c4d -p "and the integration tests?"
  weave chat -p "Summarise README.md" --jq 'select(.type == "result") | .output'`,
		Args:              argsBetween(0, 1),
		ValidArgsFunction: completeSessionIDs(g),
		RunE: func(c *cobra.Command, args []string) error {
			opts.agentSet = c.Flags().Changed("agent")
			if len(args) == 1 {
				// --resume takes its id as the next word too.
				if opts.Resume != resumeLatest {
					return usageErrorf("weave chat takes no arguments; did you mean -p %q or --resume %s?", args[0], args[0])
				}
				opts.Resume = args[0]
			}
			if opts.Prompt == "" {
				if isTerminal(opts.Streams.In) {
					opts.interactive = true
				} else {
					p, err := pipedPrompt(opts.Streams.In)
					if err != nil {
						return err
					}
					opts.Prompt = p
				}
			}
			if opts.interactive && opts.JSON {
				return usageErrorf("--json needs a prompt: weave chat --json -p \"...\"")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return chatRun(c.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Prompt, "print", "p", "", "the prompt: answer it once and exit")
	cmd.Flags().StringVar(&opts.Agent, "agent", agents.Loom, "the agent to talk to (a primary role: loom, tapestry, or a custom agent with mode: primary)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON event per line (model.delta, model.tool_call, tool.start, tool.result, model.usage, model.compacted, result)")
	cmd.Flags().StringVar(&opts.Resume, "resume", "", "continue a session: its ID, or the latest one without an ID (see `weave sessions list`)")
	cmd.Flags().Lookup("resume").NoOptDefVal = resumeLatest
	_ = cmd.RegisterFlagCompletionFunc("resume", completeSessionIDs(g))
	addAskFlags(cmd, &opts.Ask)
	cmd.Flags().BoolVar(&g.TrustNow, "trust", false, "trust the project config as it is (shown on stderr) for this run and the next, as `weave trust --yes` does")
	cmd.Flags().StringVar(&opts.Budget, "budget", "", "most the chat may spend on models, in US dollars ($5, 2.50; budget.run): a model call that could cross it is not made, and weave exits 3")
	cmd.Flags().StringVar(&opts.Bus, "bus", "", "join a bus: ws://HOST:PORT (a `weave bus serve`) or nats://HOST:PORT; the model events go to model:<session> there and the agents answer delegation there (default: no bus)")
	return cmd
}

// isTerminal reports whether r is an interactive terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// chatInputFor is the interactive chat's input: the line editor when
// stdin and stderr (where it draws) are terminals, else whole lines as they
// come, as from a pipe.
func chatInputFor(s *Streams, project string) chatInput {
	in, ok := s.In.(*os.File)
	w := s.ErrOut
	if g, isGuard := w.(*pipeGuard); isGuard {
		w = g.w
	}
	errOut, eok := w.(*os.File)
	if ok && eok && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(errOut.Fd())) && os.Getenv("TERM") != "dumb" {
		if e, err := newTermEditor(in, s.ErrOut, chatHistoryPath(project, os.Getenv)); err == nil {
			return e
		}
	}
	return newPlainInput(s.In, s.ErrOut)
}

// pipedPrompt reads the prompt from in, which is not a terminal.
func pipedPrompt(in io.Reader) (string, error) {
	b, err := io.ReadAll(in)
	if err != nil {
		return "", fmt.Errorf("read the prompt from stdin: %w", err)
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", usageErrorf(`weave chat needs a prompt: weave chat -p "...", or pipe one on stdin`)
	}
	return p, nil
}

// chatSessionFor picks the session of the chat and its agent: a new one,
// or the one --resume names, whose agent it keeps unless --agent says.
func chatSessionFor(project string, opts *chatOptions) (session, agent string, err error) {
	agent = opts.Agent
	if opts.Resume == "" {
		return "chat-" + uuid.NewString()[:8], agent, nil
	}
	var sum chat.SessionSummary
	if opts.Resume == resumeLatest {
		sum, err = chat.LatestSession(project)
		if err != nil {
			return "", "", &exitError{code: exitFailed, err: err}
		}
	} else {
		s, err := chat.ReadSession(project, opts.Resume)
		if err != nil {
			return "", "", &exitError{code: exitFailed, err: err}
		}
		sum = s.SessionSummary
	}
	if !opts.agentSet && sum.Agent != "" {
		// Checked against the project's roster (custom primaries too) once
		// the config is read.
		agent = sum.Agent
	}
	return sum.ID, agent, nil
}

func chatRun(ctx context.Context, opts *chatOptions) error {
	project, err := opts.project()
	if err != nil {
		return err
	}
	session, agent, err := chatSessionFor(project, opts)
	if err != nil {
		return err
	}
	overrides := map[string]any{}
	if err := budgetOverride(opts.Budget, overrides); err != nil {
		return err
	}
	cfg, _, err := opts.loadConfig(project, overrides)
	if err != nil {
		return err
	}
	warnUnrunHooks(opts.Streams.ErrOut, cfg)
	// The project's roles: a custom agent with mode primary is asked too.
	roster, err := tools.Roster(cfg)
	if err != nil {
		return err
	}
	primary := func(name string) int {
		i := slices.IndexFunc(roster, func(r agents.Role) bool { return strings.EqualFold(r.Name, name) })
		if i >= 0 && roster[i].Mode != agents.ModePrimary {
			return -1
		}
		return i
	}
	i := primary(agent)
	if i < 0 && !opts.agentSet {
		// A resumed session of a role that is gone or is not primary
		// continues with the default agent.
		i = primary(opts.Agent)
	}
	if i < 0 {
		return usageErrorf("--agent %q: choose a primary agent (%s)", agent, strings.Join(primaryRoles(roster), ", "))
	}
	role := roster[i]
	// Say what to configure before any plugin starts: the model the
	// agent's calls go to (agents.<name>.model, or its role's).
	if err := model.OpenSet(cfg, os.Getenv).Route(cmp.Or(cfg.Agents[role.Name].Model, role.Model)).Err; err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if opts.interactive {
		// Ctrl-C belongs to the chat: it ends a turn, not the process, so
		// the host lives on past the signal that cancels ctx.
		ctx = context.WithoutCancel(ctx)
	}
	hostOpts := []host.Option{host.WithTools(), host.WithNotice(noticeTo(opts.Streams.ErrOut))}
	var asker *termAsker
	if opts.interactive && (opts.Ask.Via == "" || opts.Ask.Via == askViaTerminal) {
		// The person at the terminal answers the permission questions.
		asker = newTermAsker()
	}
	askOpts, err := opts.Ask.hostOptions(asker)
	if err != nil {
		return err
	}
	hostOpts = append(hostOpts, askOpts...)
	if opts.Bus != "" {
		hostOpts = append(hostOpts, host.WithBus(opts.Bus))
	}
	h, closeHost, err := openLoggedHost(ctx, project, cfg, hostOpts...)
	if err != nil {
		return err
	}
	// Said after the host has ended, as the last line of the run.
	defer opts.reportConfigChange(project)
	defer closeHost()
	printWarnings(opts.Streams.ErrOut, h.Warnings())
	if h.Bus() != nil {
		// With a bus, delegation goes over it: this chat's agents answer
		// there, as a run's do.
		stopAgents, err := busface.ServeAgents(ctx, h.Bus(), h.Supervisor(), h.Gate().Names(), busface.ToolServices(h.Tools(), session, h.Logger()))
		if err != nil {
			return err
		}
		defer func() { _ = stopAgents() }()
	}
	// Claude Code's SessionStart and SessionEnd hooks frame the
	// conversation; what SessionStart says reaches the model first.
	source, reason := "startup", "other"
	if opts.Resume != "" {
		source = "resume"
	}
	if opts.interactive {
		reason = "prompt_input_exit"
	}
	h.SessionStart(ctx, session, role.Name, source)
	defer h.SessionEnd(ctx, session, role.Name, reason)
	tr := &transcript{out: opts.Streams.Out, errOut: opts.Streams.ErrOut, agent: role.Name, session: session, json: opts.JSON}
	if opts.Streams.Color && !opts.JSON {
		md, err := newMarkdownStream(opts.Streams.Out, opts.Streams.Width, os.Getenv)
		if err != nil {
			return usageErrorf("%v", err)
		}
		tr.md = md
	}
	builtins := slashCommands()
	files, warnings := fileCommands(project, cfg, builtins)
	printWarnings(opts.Streams.ErrOut, warnings)
	if opts.interactive {
		c := &chatREPL{h: h, project: project, cfg: cfg, agent: role.Name, session: session, streams: opts.Streams, tr: tr, commands: builtins, files: files, asker: asker}
		c.in = chatInputFor(opts.Streams, project)
		if _, ok := c.in.(*termEditor); ok {
			tr.spin = &spinner{out: opts.Streams.ErrOut}
		}
		return c.run(ctx)
	}
	cmd, prompt, isFile, err := fileCommandPrompt(files, opts.Prompt)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if !isFile {
		prompt = opts.Prompt
	}
	var resp plugins.AgentResponse
	stop := h.ObserveModel(tr.observe)
	err = withFileCommand(ctx, h, session, cmd, func(ctx context.Context) (err error) {
		resp, err = h.Ask(ctx, role.Name, session, prompt)
		return err
	})
	stop()
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
	}
	if be := h.Budget().Tripped(); be != nil && err != nil {
		_ = tr.finish(resp.Output, be)
		return budgetPaused(opts.Streams, be)
	}
	return tr.finish(resp.Output, err)
}

func primaryRoles(roster []agents.Role) []string {
	var out []string
	for _, r := range roster {
		if r.Mode == agents.ModePrimary {
			out = append(out, r.Name)
		}
	}
	return out
}

// transcript prints what the asked agent's model writes to stdout as it
// arrives, and the tool calls of every agent (delegated ones included) to
// stderr.
type transcript struct {
	out, errOut io.Writer
	agent       string
	session     string
	json        bool
	// md renders the answer's markdown for a terminal; nil prints it as
	// the model writes it.
	md *markdownStream
	// spin shows that the model thinks; nil off a terminal.
	spin *spinner

	mu sync.Mutex
	// streamed is the asked agent's text printed in its current call;
	// any reports that something was printed at all.
	streamed strings.Builder
	any      bool
}

func (t *transcript) observe(ev chat.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.json {
		_ = json.NewEncoder(t.out).Encode(ev)
		return
	}
	switch ev.Type {
	case chat.ModelDelta, chat.ModelUsage:
		if ev.Agent == t.agent {
			t.spin.stop()
		}
	case chat.ModelRetry, chat.ToolStart, chat.ToolResult, chat.ModelCompacting, chat.ModelCompacted, chat.ModelFallback:
		t.spin.stop()
	}
	switch ev.Type {
	case chat.ModelDelta:
		if ev.Agent != t.agent {
			return
		}
		if t.md != nil {
			t.md.write(ev.Text)
		} else {
			fmt.Fprint(t.out, ev.Text)
		}
		t.streamed.WriteString(ev.Text)
		t.any = true
	case chat.ModelRetry:
		t.endLine()
		fmt.Fprintf(t.errOut, "%s[%s]\n", t.who(ev.Agent), ev.Error)
	case chat.ModelFallback:
		t.endLine()
		if ev.Fallback != nil {
			fmt.Fprintf(t.errOut, "%s[%s]\n", t.who(ev.Agent), ev.Fallback.Line())
		}
	case chat.ToolStart:
		t.endLine()
		fmt.Fprintf(t.errOut, "%s→ %s %s\n", t.who(ev.Agent), ev.Tool, ev.Args)
	case chat.ToolResult:
		t.endLine()
		fmt.Fprintf(t.errOut, "%s  ⎿ %s %s\n", t.who(ev.Agent), ev.Tool, toolOutcome(ev))
		// The model thinks again over the result.
		t.spin.start()
	case chat.ModelUsage:
		if ev.Agent == t.agent {
			t.endLine()
		}
	case chat.ModelCompacting, chat.ModelCompacted:
		t.endLine()
		if ev.Compaction == nil {
			return
		}
		line := ev.Compaction.Line()
		if ev.Type == chat.ModelCompacting {
			line = ev.Compaction.StartLine()
		}
		if ev.Agent == t.agent {
			fmt.Fprintln(t.errOut, line)
		} else {
			fmt.Fprintf(t.errOut, "  [%s] %s\n", ev.Agent, line)
		}
	}
}

// who prefixes the lines of a delegated agent with its name.
func (t *transcript) who(agent string) string {
	if agent == t.agent {
		return ""
	}
	return "  [" + agent + "] "
}

// toolOutcome says how a tool call ended: denied and why, failed and why,
// or the size of its result.
func toolOutcome(ev chat.Event) string {
	switch {
	case ev.Denied:
		// The refusal names its cause in its first words ("denied by the
		// capability matrix (...)", "blocked by hook x: ...", "refused: ...").
		for _, w := range []string{"denied", "blocked", "refused", "webfetch refused"} {
			if strings.HasPrefix(ev.Error, w) {
				return ev.Error
			}
		}
		return "denied: " + ev.Error
	case ev.IsError:
		return "failed: " + ev.Error
	}
	return "allowed, " + byteSize(ev.Size)
}

// byteSize shows n bytes briefly.
func byteSize(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// thinking shows that the model thinks, until something is printed.
func (t *transcript) thinking() { t.spin.start() }

// endLine ends the streamed text of a call with a newline (rendering the
// rest of its markdown).
func (t *transcript) endLine() {
	if t.md != nil {
		t.md.flush()
		t.streamed.Reset()
		return
	}
	if s := t.streamed.String(); s != "" && !strings.HasSuffix(s, "\n") {
		fmt.Fprintln(t.out)
	}
	t.streamed.Reset()
}

// endLineNow ends the streamed text's line before something else is
// shown (a permission question).
func (t *transcript) endLineNow() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endLine()
}

// endTurn ends a turn of the conversation: the streamed text ends its
// line, and an answer that did not stream is printed whole.
func (t *transcript) endTurn(output string) {
	t.spin.stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endLine()
	if !t.any && output != "" {
		t.printWhole(output)
	}
	t.any = false
}

// printWhole prints an answer that did not stream.
func (t *transcript) printWhole(output string) {
	if t.md != nil {
		t.md.write(output)
		t.md.flush()
		return
	}
	fmt.Fprintln(t.out, output)
}

func (t *transcript) finish(output string, err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.json {
		// The result names its session and agent, as the events before it
		// do, so a script can resume the conversation from it alone.
		res := struct {
			Type    string `json:"type"`
			Session string `json:"session"`
			Agent   string `json:"agent"`
			Output  string `json:"output"`
			Error   string `json:"error,omitempty"`
		}{Type: "result", Session: t.session, Agent: t.agent, Output: output}
		if err != nil {
			res.Error = err.Error()
		}
		_ = json.NewEncoder(t.out).Encode(res)
	} else {
		t.endLine()
		if !t.any && output != "" {
			// Nothing streamed (a provider that does not stream): print the
			// answer whole.
			t.printWhole(output)
		}
	}
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	return nil
}
