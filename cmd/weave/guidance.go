package main

import (
	"fmt"
	"io"
)

// printWarnings tells the person about the instruction, skill and command
// files the host could not use, each naming its file.
func printWarnings(w io.Writer, warnings []string) {
	for _, msg := range warnings {
		fmt.Fprintf(w, "warning: %s\n", msg)
	}
}
