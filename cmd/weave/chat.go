package main

import (
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
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/tools"
)

type chatOptions struct {
	*globalOptions
	Streams *Streams
	Prompt  string
	Agent   string
	JSON    bool
}

func newCmdChat(g *globalOptions, s *Streams, runF func(context.Context, *chatOptions) error) *cobra.Command {
	opts := &chatOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "chat -p PROMPT",
		Short: "Ask an agent (Loom by default) one question and print its answer",
		Long: `Ask an agent one question: the agent thinks with the configured model
(model.provider, model.name), uses the tools of its capability row through the
capability gate and the hooks, may delegate (Loom hands work to Thread, Pattern
and the others), and its answer streams to stdout as the model writes it.
Tool calls are shown on stderr. With no -p, the prompt is read from stdin when
stdin is not a terminal.

Exit codes: 0 answered, 1 the agent or the model failed, 2 usage.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Prompt == "" {
				p, err := pipedPrompt(opts.Streams.In)
				if err != nil {
					return err
				}
				opts.Prompt = p
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return chatRun(c.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Prompt, "print", "p", "", "the prompt: answer it once and exit")
	cmd.Flags().StringVar(&opts.Agent, "agent", agents.Loom, "the agent to ask (a primary role: loom, tapestry, or a custom agent with mode: primary)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON event per line (model.delta, model.tool_call, model.usage, result)")
	return cmd
}

// pipedPrompt reads the prompt from in when it is not a terminal.
func pipedPrompt(in io.Reader) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return "", usageErrorf(`weave chat needs a prompt: weave chat -p "..." (an interactive chat is not available yet)`)
	}
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

func chatRun(ctx context.Context, opts *chatOptions) error {
	project, err := opts.project()
	if err != nil {
		return err
	}
	cfg, _, err := loadConfig(project, nil)
	if err != nil {
		return err
	}
	roster, err := tools.Roster(cfg)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(roster, func(r agents.Role) bool { return strings.EqualFold(r.Name, opts.Agent) })
	if i < 0 || roster[i].Mode != agents.ModePrimary {
		return usageErrorf("--agent %q: choose a primary agent (%s)", opts.Agent, strings.Join(primaryRoles(roster), ", "))
	}
	role := roster[i]
	// Say what to configure before any plugin starts.
	if _, err := model.FromConfig(cfg.Model, os.Getenv); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	h, closeHost, err := openLoggedHost(ctx, project, cfg, host.WithTools())
	if err != nil {
		return err
	}
	defer closeHost()

	session := "chat-" + uuid.NewString()[:8]
	tr := &transcript{out: opts.Streams.Out, errOut: opts.Streams.ErrOut, agent: role.Name, json: opts.JSON}
	stop := h.ObserveModel(tr.observe)
	resp, err := h.Ask(ctx, role.Name, session, opts.Prompt)
	stop()
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
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
	json        bool

	mu sync.Mutex
	// streamed is the asked agent's text printed in its current call;
	// any reports that something was printed at all.
	streamed strings.Builder
	any      bool
}

func (t *transcript) observe(ev host.ModelEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.json {
		_ = json.NewEncoder(t.out).Encode(ev)
		return
	}
	switch ev.Type {
	case host.ModelDelta:
		if ev.Agent != t.agent {
			return
		}
		fmt.Fprint(t.out, ev.Text)
		t.streamed.WriteString(ev.Text)
		t.any = true
	case host.ModelToolCall:
		t.endLine()
		if ev.Agent == t.agent {
			fmt.Fprintf(t.errOut, "→ %s\n", ev.Tool)
		} else {
			fmt.Fprintf(t.errOut, "  [%s] → %s\n", ev.Agent, ev.Tool)
		}
	case host.ModelUsage:
		if ev.Agent == t.agent {
			t.endLine()
		}
	}
}

// endLine ends the streamed text of a call with a newline.
func (t *transcript) endLine() {
	if s := t.streamed.String(); s != "" && !strings.HasSuffix(s, "\n") {
		fmt.Fprintln(t.out)
	}
	t.streamed.Reset()
}

func (t *transcript) finish(output string, err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.json {
		res := map[string]any{"type": "result", "output": output}
		if err != nil {
			res["error"] = err.Error()
		}
		_ = json.NewEncoder(t.out).Encode(res)
	} else {
		t.endLine()
		if !t.any && output != "" {
			// Nothing streamed (a provider that does not stream): print the
			// answer whole.
			fmt.Fprintln(t.out, output)
		}
	}
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	return nil
}
