package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/layout"
)

// openHostLog opens the host log, .weave/logs/weave.log, where the host and
// its plugins log (each plugin under its name). It is a file and not the
// terminal so that logs never tear the live view.
func openHostLog(project string, cfg *config.Config) (*slog.Logger, io.Closer, error) {
	path := layout.NewProject(project).HostLog()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open the host log: %w", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Log.Level)); err != nil {
		level = slog.LevelInfo
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(f, hopts)
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(f, hopts)
	}
	return slog.New(h).With("host_pid", os.Getpid()), f, nil
}
