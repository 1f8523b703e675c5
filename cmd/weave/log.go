package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/logfile"
)

// The host log's bounds (config log.max_bytes, log.backups and
// log.max_value_bytes; these are the defaults): it rotates at maxHostLog
// bytes keeping hostLogBackups older files (weave.log.1, ...), and each
// message or value of a record is cut at maxLogValue bytes, so that neither
// a flooding plugin nor one huge reason can fill the disk.
const (
	maxHostLog     = 10 << 20
	hostLogBackups = 3
	maxLogValue    = 8 << 10
)

// openHostLog opens the host log, .weave/logs/weave.log, where the host and
// its plugins log (each plugin under its name). It is a file and not the
// terminal so that logs never tear the live view.
func openHostLog(project string, cfg *config.Config) (*slog.Logger, io.Closer, error) {
	path := layout.NewProject(project).HostLog()
	size, backups, value := cmp.Or(cfg.Log.MaxBytes, maxHostLog), cmp.Or(cfg.Log.Backups, hostLogBackups), cmp.Or(cfg.Log.MaxValueBytes, maxLogValue)
	f, err := logfile.Open(project, path, int64(size), backups)
	if err != nil {
		return nil, nil, fmt.Errorf("open the host log: %w; remove it (weave creates it)", err)
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
	return slog.New(logfile.Bounded(h, value)).With("host_pid", os.Getpid()), f, nil
}

// openLoggedHost opens the host log and then the host, logging there; the
// returned close ends the host (with a context that outlives ctx's
// cancellation, so plugins end even after Ctrl-C) and then the log.
func openLoggedHost(ctx context.Context, project string, cfg *config.Config, opts ...host.Option) (*host.Host, func(), error) {
	logger, logFile, err := openHostLog(project, cfg)
	if err != nil {
		return nil, nil, err
	}
	h, err := host.Open(ctx, project, cfg, append([]host.Option{host.WithLogger(logger)}, opts...)...)
	if err != nil {
		_ = logFile.Close()
		return nil, nil, err
	}
	unfollow := followJobs(ctx, h)
	return h, func() {
		unfollow()
		_ = h.Close(context.WithoutCancel(ctx))
		_ = logFile.Close()
	}, nil
}
