package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Streams are the command's standard streams, injectable so that tests read
// what a command prints.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Terminal reports that Out is an interactive terminal, which turns on
	// the live view.
	Terminal bool
	// Width is the terminal's width in columns (0 when unknown).
	Width int
	// Color turns on colour (--color, NO_COLOR); the root command sets it.
	Color bool
}

// palette is the styles for this output.
func (s *Streams) palette() palette { return newPalette(s.Color) }

// SystemStreams returns the process's standard streams.
func SystemStreams() *Streams {
	s := &Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if fd := int(os.Stdout.Fd()); term.IsTerminal(fd) && os.Getenv("TERM") != "dumb" {
		s.Terminal = true
		if w, _, err := term.GetSize(fd); err == nil {
			s.Width = w
		}
	}
	return s
}
