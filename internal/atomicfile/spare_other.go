//go:build !linux

package atomicfile

import "os"

// spare: off Linux a Writer writes as WriteFile does.
type spare struct{}

func (w *Writer) prepare()                                {}
func (s *spare) ready() bool                              { return false }
func (s *spare) unsupported() bool                        { return true }
func (s *spare) commit([]byte, os.FileMode, string) error { return nil }
func lasting(error) bool                                  { return true }
func (s *spare) release()                                 {}
