package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/instructions"
	"github.com/weavehq/weave/internal/layout"
)

// chatREPL is an interactive conversation with one agent in one session: the
// person's lines go to the agent (or to a slash command), the answers
// stream to stdout, tool calls to stderr.
type chatREPL struct {
	h        *host.Host
	project  string
	cfg      *config.Config
	agent    string
	session  string
	streams  *Streams
	tr       *transcript
	commands []slashCommand
	// files are the command files' commands, after the built-ins.
	files []instructions.Command
	// done ends the conversation once the current line is handled.
	done bool
}

// run holds the conversation until the person ends it: /exit, Ctrl-D,
// Ctrl-C at the prompt, a second Ctrl-C during a turn, or SIGTERM.
func (c *chatREPL) run(ctx context.Context, in io.Reader) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stop := c.h.ObserveModel(c.tr.observe)
	defer stop()

	lines := readLines(in)
	c.greet()
	var queue []string
	for !c.done {
		var line string
		switch {
		case len(queue) > 0:
			// Typed during the last turn: shown again where it is answered.
			line, queue = queue[0], queue[1:]
			c.prompt()
			fmt.Fprintln(c.streams.ErrOut, line)
		case lines == nil:
			c.done = true
			continue
		default:
			c.prompt()
			select {
			case l, ok := <-lines:
				if !ok {
					// Ctrl-D: end the prompt's line.
					fmt.Fprintln(c.streams.ErrOut)
					c.done = true
					continue
				}
				line = l
			case <-sigs:
				fmt.Fprintln(c.streams.ErrOut)
				c.done = true
				continue
			}
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var more []string
		var exit bool
		more, exit, lines = c.turn(ctx, line, lines, sigs)
		queue = append(queue, more...)
		if exit {
			c.done = true
		}
	}
	c.bye()
	return nil
}

// readLines sends the lines read from in until its end, then closes the
// channel. The reader stays blocked in a read when the chat ends; the
// process exits under it.
func readLines(in io.Reader) chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// turn handles one line while it watches for Ctrl-C (the first cancels the
// turn, a second ends the chat) and for lines typed meanwhile, which are
// queued for after it and count at once as the person's (a plan running
// in this session stops its continuation prompts). It returns the queued
// lines, whether to end the chat, and the line channel (nil after Ctrl-D).
func (c *chatREPL) turn(ctx context.Context, line string, lines chan string, sigs <-chan os.Signal) ([]string, bool, chan string) {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.handle(tctx, line) }()
	var queued []string
	interrupted, exit := false, false
	watch := lines
	for {
		select {
		case err := <-done:
			c.tr.endTurn("")
			switch {
			case interrupted:
				fmt.Fprintln(c.streams.ErrOut, "interrupted: the conversation is saved up to here; type to go on, Ctrl-C or Ctrl-D to leave")
			case err != nil:
				fmt.Fprintf(c.streams.ErrOut, "error: %v\n", err)
			}
			return queued, exit, lines
		case sig := <-sigs:
			if sig == syscall.SIGTERM || interrupted {
				exit = true
			}
			interrupted = true
			cancel()
		case l, ok := <-watch:
			if !ok {
				// Ctrl-D while the agent works: leave once it is done.
				watch, lines, exit = nil, nil, true
				continue
			}
			queued = append(queued, l)
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "/") {
				if err := c.h.UserMessage(ctx, c.session, c.agent, t); err != nil {
					c.h.Logger().Warn("chat.message hooks for a queued message", "err", err)
				}
			}
			// Said once the hooks have heard it: a plan running in this
			// session has stopped its continuation prompts by now.
			fmt.Fprintln(c.streams.ErrOut, "  (queued: answered when this turn ends)")
		}
	}
}

// handle runs a slash command, or sends the line to the agent.
func (c *chatREPL) handle(ctx context.Context, line string) error {
	if strings.HasPrefix(line, "/") {
		name, arg, _ := strings.Cut(line[1:], " ")
		cmd, ok := c.command(name)
		if ok {
			return cmd.run(ctx, c, strings.TrimSpace(arg))
		}
		fc, prompt, isFile, err := fileCommandPrompt(c.files, line)
		if err != nil {
			return err
		}
		if !isFile {
			return fmt.Errorf("unknown command /%s; commands: %s", name, c.commandNames())
		}
		return withFileCommand(ctx, c.h, c.session, fc, func(ctx context.Context) error { return c.ask(ctx, c.agent, prompt) })
	}
	return c.ask(ctx, c.agent, line)
}

// ask has agent answer text in the chat's session, streaming its answer.
func (c *chatREPL) ask(ctx context.Context, agent, text string) error {
	resp, err := c.h.Ask(ctx, agent, c.session, text)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	c.tr.endTurn(resp.Output)
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	return nil
}

func (c *chatREPL) command(name string) (slashCommand, bool) {
	for _, cmd := range c.commands {
		if cmd.name == name {
			return cmd, true
		}
	}
	return slashCommand{}, false
}

func (c *chatREPL) commandNames() string {
	names := make([]string, 0, len(c.commands)+len(c.files))
	for _, cmd := range c.commands {
		names = append(names, "/"+cmd.name)
	}
	for _, f := range c.files {
		names = append(names, "/"+f.Name)
	}
	return strings.Join(names, ", ")
}

func (c *chatREPL) greet() {
	resumed := ""
	if c.saved() {
		resumed = ", resumed"
	}
	fmt.Fprintf(c.streams.ErrOut, "weave chat with %s (session %s%s)\n/help for commands · Ctrl-C interrupts · Ctrl-D exits\n", c.agent, c.session, resumed)
}

func (c *chatREPL) prompt() { fmt.Fprint(c.streams.ErrOut, "› ") }

// bye says how to come back to a session that has something in it.
func (c *chatREPL) bye() {
	if c.saved() {
		fmt.Fprintf(c.streams.ErrOut, "session %s saved; resume it with: weave chat --resume %s\n", c.session, c.session)
	}
}

// saved reports whether the session has a transcript.
func (c *chatREPL) saved() bool {
	_, err := os.Stat(layout.NewProject(c.project).Transcript(c.session))
	return err == nil
}
