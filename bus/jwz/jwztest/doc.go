// Package jwztest reads a jwz store the way its other readers do, for
// tests of what Weave writes there: ReadStore from the format jwz's README
// documents (independent of package jwz's types), and IdleParse, a port of
// the loop-event parser of idle's TUI (tui/src/event_parser.zig), which
// looks fields up by key text rather than decoding JSON, so it catches
// bodies idle would misread.
//
// It is for tests only; it fails the test it is given on a malformed log.
package jwztest
