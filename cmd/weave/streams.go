package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
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

	// filter is --jq's filter in front of Out, if any.
	filter *jqFilter
}

// filterJSON turns on c's --json output and puts a jq filter of expr in
// front of Out. A command without --json is a usage error.
func (s *Streams) filterJSON(c *cobra.Command, expr string) error {
	f := c.Flags().Lookup("json")
	if f == nil {
		return usageErrorf("--jq filters --json output, and `%s` has no --json", c.CommandPath())
	}
	if err := f.Value.Set("true"); err != nil {
		return err
	}
	jq, err := newJQFilter(s.Out, expr)
	if err != nil {
		return err
	}
	s.filter, s.Out = jq, jq
	return nil
}

// closeFilter flushes --jq's filter and returns its error.
func (s *Streams) closeFilter() error {
	if s.filter == nil {
		return nil
	}
	f := s.filter
	s.filter = nil
	return f.Close()
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
