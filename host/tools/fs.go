package tools

import (
	"bytes"
)

// Limits of the listing tools.
const (
	maxGlobResults = 1000
	maxGrepMatches = 500
	maxGrepLine    = 500     // bytes of one matching line shown
	maxGrepFile    = 8 << 20 // larger files are skipped
	sniffBytes     = 8000    // a NUL byte in these marks a binary file
)

func isBinary(head []byte) bool { return bytes.IndexByte(head, 0) >= 0 }

// dirArg resolves the optional path argument of glob and grep (default:
// the project root).
func (t *Tools) dirArg(args map[string]any) (real, rel string, err error) {
	p, err := stringArg(args, argPath, false)
	if err != nil {
		return "", "", err
	}
	if p == "" {
		return t.root, ".", nil
	}
	return t.resolve(p)
}
