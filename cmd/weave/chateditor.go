package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/term"
)

// termEditor is the chat's input on a terminal: a line editor (golang.org/x/
// term's, with the cursor keys, Home/End, Ctrl-A/E/K/U/W, and history on
// Up/Down and Ctrl-P/N), in raw mode only while the person edits a line.
// While a turn runs the terminal is in its normal mode: Ctrl-C interrupts
// the turn as a signal, and lines typed meanwhile are read whole.
//
// A message goes on over several lines when a line ends with a backslash,
// or with Alt-Enter (Esc Enter), or Shift-Enter where the terminal tells it
// apart (the kitty keyboard protocol's CSI 13;2u, xterm's modifyOtherKeys
// CSI 27;2;13~). Ctrl-C drops the message being typed; at an empty prompt
// it ends the chat, as Ctrl-D does.
type termEditor struct {
	fd  int
	out io.Writer
	// hist is the person's earlier messages.
	hist *chatHistory
	// chunks is what the terminal gave, read by one goroutine for the
	// life of the chat; closed at the end of input.
	chunks chan []byte
	// orig is the terminal's state when the chat started.
	orig *term.State

	// mu is held by whoever reads chunks as lines of the editor.
	mu sync.Mutex
	// rest is read from chunks and not yet given to the editor.
	rest []byte
	// goesOn says the Enter just given was Alt- or Shift-Enter.
	goesOn bool
	// stopRead is the error the editor's next read returns: the person
	// pressed Ctrl-C.
	stopRead error
	// readCtx bounds the current read.
	readCtx context.Context
	// eof is set once chunks is closed.
	eof bool
	// pasting is set between the terminal's paste brackets.
	pasting bool
	// histWarned is set once the history could not be kept.
	histWarned bool
	// raw is set while the editor has the terminal in raw mode.
	raw atomic.Bool

	// busy reads the lines typed during a turn; nil between turns.
	busyMu sync.Mutex
	busy   *busyReader
}

// busyReader hands the lines typed during a turn to the chat.
type busyReader struct {
	out        chan string
	stop, done chan struct{}
}

var (
	// errClearLine is Ctrl-C with something typed: the message is dropped.
	errClearLine = errors.New("line cleared")
	// errLeave is Ctrl-C at an empty prompt.
	errLeave = errors.New("leave")
)

// ctrlCKey stands for Ctrl-C in what the editor reads: a key it does not
// bind, which reaches the key callback with the line as it is (the editor
// itself would end the line as at the end of input).
const ctrlCKey = 0x1c

// newTermEditor drives the terminal in (whose output is out, a terminal
// too), keeping history at histPath ("" for none).
func newTermEditor(in *os.File, out io.Writer, histPath string) (*termEditor, error) {
	fd := int(in.Fd())
	orig, err := term.GetState(fd)
	if err != nil {
		return nil, fmt.Errorf("read the terminal's mode: %w", err)
	}
	e := &termEditor{fd: fd, out: out, hist: loadChatHistory(histPath), chunks: make(chan []byte), orig: orig}
	go func() {
		defer close(e.chunks)
		for {
			buf := make([]byte, 4096)
			n, err := in.Read(buf)
			if n > 0 {
				e.chunks <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return e, nil
}

// close gives the terminal back as the chat found it, also when the chat
// ends (SIGTERM) while the editor has it in raw mode.
func (e *termEditor) close() {
	if e.raw.Load() {
		fmt.Fprint(e.out, "\x1b[?2004l")
	}
	_ = term.Restore(e.fd, e.orig)
}

func (e *termEditor) next() <-chan string {
	ch := make(chan string, 1)
	go func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		msg, err := e.readMessage(context.Background(), chatPromptText, true)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, errLeave) {
				fmt.Fprintf(e.out, "\r\ninput: %v\r\n", err)
			}
			close(ch)
			return
		}
		if herr := e.hist.add(msg); herr != nil && !e.histWarned {
			// Said once: the chat goes on without keeping its history.
			e.histWarned = true
			fmt.Fprintf(e.out, "%v\n", herr)
		}
		ch <- msg
	}()
	return ch
}

func (e *termEditor) question(ctx context.Context, prompt string) (string, error) {
	b := e.pauseBusy()
	defer e.resumeBusy(b)
	e.mu.Lock()
	defer e.mu.Unlock()
	ans, err := e.readMessage(ctx, prompt, false)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", errNoAnswer
	}
	return ans, nil
}

// readMessage reads one message with the editor, in raw mode; withHistory
// offers the earlier messages. A message that goes on over several lines
// comes back with its line breaks.
func (e *termEditor) readMessage(ctx context.Context, prompt string, withHistory bool) (string, error) {
	if e.eof && len(e.rest) == 0 {
		return "", io.EOF
	}
	st, err := term.MakeRaw(e.fd)
	if err != nil {
		return "", fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	// Bracketed paste: a pasted block of lines is one message.
	fmt.Fprint(e.out, "\x1b[?2004h")
	e.raw.Store(true)
	defer func() {
		fmt.Fprint(e.out, "\x1b[?2004l")
		_ = term.Restore(e.fd, st)
		e.raw.Store(false)
	}()
	e.readCtx, e.pasting = ctx, false
	var parts []string
	p := prompt
	for {
		t := term.NewTerminal(editorIO{e}, p)
		if w, h, err := term.GetSize(e.fd); err == nil && w > 0 && h > 0 {
			_ = t.SetSize(w, h)
		}
		t.History = noRecall{}
		if withHistory {
			t.History = recall{e.hist}
		}
		t.AutoCompleteCallback = func(line string, _ int, key rune) (string, int, bool) {
			if key != ctrlCKey {
				return "", 0, false
			}
			if line == "" && len(parts) == 0 {
				e.stopRead = errLeave
			} else {
				e.stopRead = errClearLine
			}
			return line, len(line), true
		}
		e.goesOn = false
		line, err := t.ReadLine()
		switch {
		case errors.Is(err, errClearLine):
			// As a shell does: the dropped line stays, marked, and a new
			// prompt starts under it.
			fmt.Fprint(e.out, "^C\r\n")
			parts, p = nil, prompt
			continue
		case err != nil && !errors.Is(err, term.ErrPasteIndicator):
			return "", err
		}
		if withHistory {
			line = strings.ReplaceAll(line, recallBreak, "\n")
		}
		if strings.HasSuffix(line, `\`) {
			line, e.goesOn = strings.TrimSuffix(line, `\`), true
		}
		parts = append(parts, line)
		if !e.goesOn {
			return strings.Join(parts, "\n"), nil
		}
		p = "… "
	}
}

// editorIO is the editor's terminal: it reads the terminal's input (up to
// one Enter at a time, Ctrl-C and Alt/Shift-Enter translated) and writes
// to the chat's stderr.
type editorIO struct{ e *termEditor }

func (r editorIO) Write(p []byte) (int, error) { return r.e.out.Write(p) }

// The terminal brackets what is pasted with these, in bracketed paste
// mode (on while the editor reads).
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// shiftEnters are what terminals that tell it apart send for Shift-Enter.
var shiftEnters = [][]byte{[]byte("\x1b[13;2u"), []byte("\x1b[27;2;13~")}

func (r editorIO) Read(p []byte) (int, error) {
	e := r.e
	if err := e.stopRead; err != nil {
		e.stopRead = nil
		return 0, err
	}
	for len(e.rest) == 0 {
		if e.eof {
			return 0, io.EOF
		}
		select {
		case b, ok := <-e.chunks:
			if !ok {
				e.eof = true
				continue
			}
			e.rest = b
		case <-e.readCtx.Done():
			return 0, e.readCtx.Err()
		}
	}
	n := 0
	for n < len(p) && len(e.rest) > 0 {
		c := e.rest[0]
		switch {
		case bytes.HasPrefix(e.rest, pasteStart):
			e.pasting = true
			e.rest = e.rest[len(pasteStart):]
			continue
		case bytes.HasPrefix(e.rest, pasteEnd):
			e.pasting = false
			e.rest = e.rest[len(pasteEnd):]
			continue
		case e.pasting && (c == '\r' || c == '\n'):
			// A pasted line break stays in the message, shown as ↵.
			if n+len(recallBreak) > len(p) {
				return n, nil
			}
			n += copy(p[n:], recallBreak)
			e.rest = e.rest[1:]
			if c == '\r' && len(e.rest) > 0 && e.rest[0] == '\n' {
				e.rest = e.rest[1:]
			}
			continue
		case c == 3:
			p[n] = ctrlCKey
			e.rest = e.rest[1:]
			return n + 1, nil
		case c == '\r' || c == '\n':
			p[n] = '\r'
			e.rest = e.rest[1:]
			if c == '\r' && len(e.rest) > 0 && e.rest[0] == '\n' {
				e.rest = e.rest[1:]
			}
			return n + 1, nil
		case c == 0x1b && len(e.rest) > 1 && (e.rest[1] == '\r' || e.rest[1] == '\n'):
			p[n] = '\r'
			e.rest = e.rest[2:]
			e.goesOn = true
			return n + 1, nil
		case c == 0x1b:
			for _, s := range shiftEnters {
				if bytes.HasPrefix(e.rest, s) {
					p[n] = '\r'
					e.rest = e.rest[len(s):]
					e.goesOn = true
					return n + 1, nil
				}
			}
		}
		p[n] = c
		n++
		e.rest = e.rest[1:]
	}
	return n, nil
}

// typed reads the lines typed while a turn runs, in the terminal's
// normal mode (which echoes them and edits them as it does).
func (e *termEditor) typed() (<-chan string, func()) {
	out := make(chan string)
	e.startBusy(out)
	return out, func() { e.pauseBusy() }
}

func (e *termEditor) startBusy(out chan string) {
	b := &busyReader{out: out, stop: make(chan struct{}), done: make(chan struct{})}
	e.busyMu.Lock()
	e.busy = b
	e.busyMu.Unlock()
	go func() {
		defer close(b.done)
		e.mu.Lock()
		defer e.mu.Unlock()
		for {
			if i := bytes.IndexAny(e.rest, "\r\n"); i >= 0 {
				line, skip := string(e.rest[:i]), i+1
				if e.rest[i] == '\r' && skip < len(e.rest) && e.rest[skip] == '\n' {
					skip++
				}
				select {
				case out <- line:
					e.rest = e.rest[skip:]
					continue
				case <-b.stop:
					return
				}
			}
			if e.eof {
				close(out)
				<-b.stop
				return
			}
			select {
			case c, ok := <-e.chunks:
				if !ok {
					e.eof = true
					continue
				}
				e.rest = append(e.rest, c...)
			case <-b.stop:
				return
			}
		}
	}()
}

// pauseBusy stops the reader of the lines typed during a turn, if one
// runs, and returns its channel for resumeBusy.
func (e *termEditor) pauseBusy() chan string {
	e.busyMu.Lock()
	b := e.busy
	e.busy = nil
	e.busyMu.Unlock()
	if b == nil {
		return nil
	}
	close(b.stop)
	<-b.done
	return b.out
}

// resumeBusy starts reading the lines of a turn again into out.
func (e *termEditor) resumeBusy(out chan string) {
	if out == nil || e.eof {
		return
	}
	e.startBusy(out)
}
