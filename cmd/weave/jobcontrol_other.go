//go:build !unix

package main

import "io"

// followJobControl has no job control to follow off unix.
func followJobControl(io.Writer) (*jobControl, func()) { return &jobControl{}, func() {} }
