// Package docrun keeps the documentation's commands true: its test runs
// every runnable block of README.md and docs/*.md through the built weave
// binary, and fails when one does not exit 0.
//
// A block is runnable when its fence's info string is "sh run":
//
//	```sh run
//	weave init
//	```
//
// The blocks of one page run in order, each in a fresh `sh -e`, in one
// temporary project directory shared by that page's blocks, with the
// built weave first on PATH, HOME and the XDG directories in the test's
// temporary space, and no WEAVE_* or model key variable from the
// environment that runs the test: offline, nothing configured. A block
// must stop what it starts: a process of its group still running when it
// exits fails the test. Blocks whose fence has any other info string are
// text, never run; a fence inside a longer fence (a plan shown in a
// ````markdown block) is text of the outer block.
package docrun
