package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/itchyny/gojq"
)

// jqFilter passes a command's JSON output through a jq expression, as gh's
// --jq does: every JSON value the command writes (one document, or one per
// line for event streams) is fed to the expression as it arrives; string
// results print raw, others as compact JSON, one per line.
type jqFilter struct {
	pw   *io.PipeWriter
	done chan error
}

// newJQFilter compiles expr and starts filtering into out.
func newJQFilter(out io.Writer, expr string) (*jqFilter, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, usageErrorf("--jq %q: %v", expr, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, usageErrorf("--jq %q: %v", expr, err)
	}
	pr, pw := io.Pipe()
	f := &jqFilter{pw: pw, done: make(chan error, 1)}
	go func() {
		err := filterJSON(pr, out, code)
		// Drain what the command still writes, so that it never blocks on
		// a filter that stopped.
		_, _ = io.Copy(io.Discard, pr)
		f.done <- err
	}()
	return f, nil
}

func (f *jqFilter) Write(p []byte) (int, error) { return f.pw.Write(p) }

// Close ends the input and returns the first error of the expression.
func (f *jqFilter) Close() error {
	_ = f.pw.Close()
	return <-f.done
}

func filterJSON(in io.Reader, out io.Writer, code *gojq.Code) error {
	dec := json.NewDecoder(in)
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("--jq: the output is not JSON: %w", err)
		}
		iter := code.Run(v)
		for {
			r, ok := iter.Next()
			if !ok {
				break
			}
			if err, ok := r.(error); ok {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					return nil
				}
				return fmt.Errorf("--jq: %w", err)
			}
			var line []byte
			if s, ok := r.(string); ok {
				line = []byte(s)
			} else {
				b, err := gojq.Marshal(r)
				if err != nil {
					return fmt.Errorf("--jq: %w", err)
				}
				line = b
			}
			if _, err := out.Write(append(line, '\n')); err != nil {
				return err
			}
		}
	}
}
