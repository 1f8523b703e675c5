package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pluginStderr receives a plugin's stderr: it forwards each line to the host
// log under the plugin's name (hclog JSON lines keep their level, message and
// fields) and keeps the last lines for error messages. Anything a plugin
// writes is accepted; nothing it writes can make the host fail.
//
// What is forwarded to the log is rate-limited (stderrRate bytes a second,
// in bursts of up to stderrBurst): a plugin that floods stderr loses lines,
// counted in one line logged once it slows down, instead of filling the
// disk. The last lines are kept whatever the rate.
type pluginStderr struct {
	logger *slog.Logger
	keep   int

	mu      sync.Mutex
	partial []byte
	lines   []string
	limit   *rate.Limiter
	dropped int
}

// The rate at which a plugin's stderr reaches the host log.
const (
	stderrRate  = 64 << 10
	stderrBurst = 256 << 10
)

func newPluginStderr(logger *slog.Logger, keep int) *pluginStderr {
	return &pluginStderr{logger: logger, keep: keep, limit: rate.NewLimiter(stderrRate, stderrBurst)}
}

// maxLine bounds a line kept in memory; longer lines are cut.
const maxLine = 4096

func (w *pluginStderr) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			if len(w.partial) > maxLine {
				w.line(w.partial)
				w.partial = w.partial[:0]
			}
			break
		}
		w.partial = append(w.partial, p[:i]...)
		w.line(w.partial)
		w.partial = w.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

// line handles one complete line; w.mu is held.
func (w *pluginStderr) line(b []byte) {
	if len(b) > maxLine {
		b = b[:maxLine]
	}
	raw := strings.TrimRight(string(b), "\r")
	if strings.TrimSpace(raw) == "" {
		return
	}
	level, msg, attrs, ok := parseHCLogLine(raw)
	if !ok {
		level, msg, attrs = slog.LevelInfo, raw, nil
		if strings.HasPrefix(raw, "panic: ") || strings.HasPrefix(raw, "fatal error: ") {
			level = slog.LevelError
		}
	}
	if w.limit.AllowN(time.Now(), len(raw)) {
		if w.dropped > 0 {
			w.logger.Warn("plugin stderr over its rate: lines left out of the log", "dropped", w.dropped, "rate_bytes_per_second", stderrRate)
			w.dropped = 0
		}
		w.logger.Log(context.Background(), level, msg, attrs...)
	} else {
		w.dropped++
	}
	shown := raw
	if ok {
		shown = fmt.Sprintf("[%s] %s", strings.ToLower(level.String()), msg)
		for i := 0; i+1 < len(attrs); i += 2 {
			shown += fmt.Sprintf(" %v=%v", attrs[i], attrs[i+1])
		}
	}
	w.lines = append(w.lines, shown)
	if len(w.lines) > w.keep {
		w.lines = slices.Delete(w.lines, 0, len(w.lines)-w.keep)
	}
}

// Tail returns the last lines the plugin wrote to stderr, oldest first.
func (w *pluginStderr) Tail() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

// tailText formats the last lines for an error message.
func (w *pluginStderr) tailText() string {
	lines := w.Tail()
	if len(lines) == 0 {
		return "it wrote nothing to stderr"
	}
	return "last stderr lines:\n  " + strings.Join(lines, "\n  ")
}

// parseHCLogLine reads one hclog JSON line. Fields of any type are accepted.
func parseHCLogLine(line string) (slog.Level, string, []any, bool) {
	if !strings.HasPrefix(line, "{") {
		return 0, "", nil, false
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return 0, "", nil, false
	}
	msg, _ := m["@message"].(string)
	if msg == "" {
		msg = fmt.Sprint(m["@message"])
	}
	lvl, _ := m["@level"].(string)
	var level slog.Level
	switch strings.ToLower(lvl) {
	case "trace":
		level = slog.LevelDebug - 4
	case "debug":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		level = slog.LevelInfo
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		switch k {
		case "@message", "@level", "@timestamp", "@module", "@caller":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		attrs = append(attrs, k, m[k])
	}
	return level, msg, attrs, true
}
