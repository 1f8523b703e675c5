package guard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TokenPath is where a local bus keeps its token when none is configured:
// $XDG_RUNTIME_DIR/weave/bus.token (a per-user directory that lives as long
// as the login), else $XDG_STATE_HOME/weave/bus.token, else the user config
// directory. Local weave commands read it from there.
func TokenPath() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "weave", "bus.token"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "weave", "bus.token"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find a directory for the bus token: %w (set XDG_RUNTIME_DIR or bus.token)", err)
	}
	return filepath.Join(d, "weave", "bus.token"), nil
}

// ReadTokenFile reads the token kept at path. A missing file is ("", nil).
// The file must be a regular file only its owner can read: a token others
// could read or replace protects nothing.
func ReadTokenFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the bus token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read the bus token: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the bus token %s is not a regular file: remove it and restart `weave bus serve`", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the bus token %s can be read by others (mode %v): run chmod 600 %s, or remove it and restart `weave bus serve`", path, fi.Mode().Perm(), path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("read the bus token: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// LoadOrCreateToken returns the token kept at path, creating it (mode 0600,
// in a 0700 directory) when there is none yet. The token is kept across
// restarts of the bus, so peers that read it once keep working.
func LoadOrCreateToken(path string) (string, error) {
	if tok, err := ReadTokenFile(path); err != nil || tok != "" {
		return tok, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create the bus token's directory: %w", err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("create the bus token: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ReadTokenFile(path) // another bus created it first
	}
	if err != nil {
		return "", fmt.Errorf("create the bus token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write the bus token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write the bus token: %w", err)
	}
	return tok, nil
}
