package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// chatInput is where the interactive chat reads what the person types:
// the line editor on a terminal (chateditor.go), else plainInput, which
// reads lines as they come.
type chatInput interface {
	// next shows the prompt and sends the person's next message; the
	// channel is closed instead when the input ends (Ctrl-D, or Ctrl-C at
	// an empty prompt).
	next() <-chan string
	// typed returns the lines typed while a turn runs, closed at the end
	// of the input, and a function to call when the turn is over.
	typed() (<-chan string, func())
	// question shows prompt and reads one answer, even while a turn runs:
	// the answer is not taken as a message. errNoAnswer when the input
	// ends or the person interrupts.
	question(ctx context.Context, prompt string) (string, error)
	// close gives the terminal back as it was found.
	close()
}

// errNoAnswer is a question the person did not answer.
var errNoAnswer = errors.New("no answer")

// chatPromptText is the prompt of the person's messages.
const chatPromptText = "› "

// plainInput reads whole lines, unedited, from a stdin that is not a
// terminal the chat can drive (or a terminal whose stderr is not one).
type plainInput struct {
	errOut io.Writer
	lines  chan string

	mu sync.Mutex
	// answer takes the next line read while a question waits for it.
	answer chan string
	// ended is set at the end of the input.
	ended bool
}

// newPlainInput reads in until its end. The reader stays blocked in a
// read when the chat ends; the process exits under it.
func newPlainInput(in io.Reader, errOut io.Writer) *plainInput {
	p := &plainInput{errOut: errOut, lines: make(chan string)}
	go func() {
		defer func() {
			p.mu.Lock()
			p.ended = true
			if p.answer != nil {
				close(p.answer)
				p.answer = nil
			}
			p.mu.Unlock()
			close(p.lines)
		}()
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			a := p.answer
			p.answer = nil
			p.mu.Unlock()
			if a != nil {
				a <- sc.Text()
				continue
			}
			p.lines <- sc.Text()
		}
	}()
	return p
}

func (p *plainInput) next() <-chan string {
	fmt.Fprint(p.errOut, chatPromptText)
	return p.lines
}

func (p *plainInput) typed() (<-chan string, func()) { return p.lines, func() {} }

func (p *plainInput) question(ctx context.Context, prompt string) (string, error) {
	a := make(chan string, 1)
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return "", errNoAnswer
	}
	p.answer = a
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.answer == a {
			p.answer = nil
		}
		p.mu.Unlock()
	}()
	fmt.Fprint(p.errOut, prompt)
	select {
	case l, ok := <-a:
		if !ok {
			return "", errNoAnswer
		}
		return l, nil
	case <-ctx.Done():
		fmt.Fprintln(p.errOut)
		return "", ctx.Err()
	}
}

func (p *plainInput) close() {}
