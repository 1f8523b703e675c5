package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// debounce is how long Watch waits after the last file event before it
// reloads, so an editor's write-rename-chmod burst is one reload.
const debounce = 100 * time.Millisecond

// Watch calls onChange once with the current config as soon as its watches
// are in place, then again whenever the user or project config file is
// created, modified, replaced by a rename or removed and the result differs
// from the last one it reported. A load that fails is reported as
// onChange(nil, nil, err); the watch goes on. It watches the directories,
// not the files, so editors that write a temp file and rename it over the
// config are seen; a directory that does not exist yet is waited for from
// its nearest existing parent. The environment and flags of opts are
// applied to every reload. Watch returns nil when ctx is done, or an error
// when it cannot watch at all. onChange runs on Watch's goroutine.
func Watch(ctx context.Context, opts Options, onChange func(*Config, *Sources, error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch config: %w", err)
	}
	defer w.Close()

	var targets []string
	for _, d := range []string{opts.UserDir(), opts.ProjectConfigDir()} {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if !slices.Contains(targets, d) {
			targets = append(targets, d)
		}
	}
	watched := map[string]bool{}
	arm := func() error {
		want := map[string]bool{}
		for _, t := range targets {
			d, err := nearestDir(t)
			if err != nil {
				return err
			}
			want[d] = true
		}
		for d := range watched {
			if !want[d] {
				_ = w.Remove(d) // may be gone already
				delete(watched, d)
			}
		}
		for d := range want {
			if !watched[d] {
				if err := w.Add(d); err != nil {
					return fmt.Errorf("watch config directory %s: %w", d, err)
				}
				watched[d] = true
			}
		}
		return nil
	}
	if err := arm(); err != nil {
		return err
	}

	type result struct {
		c   *Config
		s   *Sources
		err string
	}
	var last result
	report := func(force bool) {
		c, s, err := Load(opts)
		r := result{c: c, s: s}
		if err != nil {
			r.err = err.Error()
		}
		if !force && reflect.DeepEqual(r, last) {
			return
		}
		last = r
		onChange(c, s, err)
	}
	report(true)

	timer := time.NewTimer(debounce)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("watch config: the file watcher closed")
			}
			if !relevant(ev.Name, targets) {
				continue
			}
			// A directory on the way to a target may have appeared or gone.
			if err := arm(); err != nil {
				onChange(nil, nil, err)
			}
			timer.Reset(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("watch config: the file watcher closed")
			}
			onChange(nil, nil, fmt.Errorf("watch config: %w", err))
		case <-timer.C:
			report(false)
		}
	}
}

// relevant says whether an event on path may change the config: a config
// file in a target directory, or a target directory or one of its parents.
func relevant(path string, targets []string) bool {
	for _, t := range targets {
		if filepath.Dir(path) == t && slices.Contains(configNames, filepath.Base(path)) {
			return true
		}
		if path == t || strings.HasPrefix(t, path+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// nearestDir returns dir if it exists, else its nearest existing parent.
func nearestDir(dir string) (string, error) {
	for {
		fi, err := os.Stat(dir)
		if err == nil && fi.IsDir() {
			return dir, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("watch config directory %s: %w", dir, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("watch config directory %s: no parent directory exists", dir)
		}
		dir = parent
	}
}
