// Command weave runs plans with AI coding agents.
package main

import "os"

func main() { os.Exit(Main()) }

// Main runs the weave command line and returns its exit code.
func Main() int { return 0 }
