package supervisor

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
)

func TestPluginEnv(t *testing.T) {
	// The base comes narrowed by the host's policy; the supervisor adds to it.
	environ := []string{"PATH=/bin", "HOME=/h", "LANG=C.UTF-8", "TMPDIR=/tmp", "WEAVE_LOG=debug"}
	got := pluginEnv(environ, Entry{Name: "p", Env: map[string]string{"B": "2", "A": "1"}})
	want := []string{"PATH=/bin", "HOME=/h", "LANG=C.UTF-8", "TMPDIR=/tmp", "WEAVE_LOG=debug",
		"WEAVE_PLUGIN_NAME=p", fmt.Sprintf("WEAVE_HOST_PID=%d", os.Getpid()), "A=1", "B=2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pluginEnv mismatch (-want +got):\n%s", diff)
	}
}

func TestPluginStderr(t *testing.T) {
	sink := newLogSink()
	w := newPluginStderr(slog.New(sink).With("plugin", "p"), 3)
	// go-plugin writes a line and its newline separately; plugins may split
	// lines anywhere.
	for _, chunk := range []string{
		`{"@level":"warn","@message":"disk low","@timestamp":"2026-01-01T00:00:00.000000Z","free":3}`, "\n",
		"plain ", "text\n",
		`{"@message": 5, "@level": 7}` + "\n",
		"\n",
		"panic: boom\n",
		"last",
	} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", chunk, n, err, len(chunk))
		}
	}
	wantTail := []string{"plain text", "[info] 5", "panic: boom"}
	if diff := cmp.Diff(wantTail, w.Tail()); diff != "" {
		t.Errorf("Tail mismatch (-want +got):\n%s", diff)
	}
	type rec struct {
		Level slog.Level
		Msg   string
	}
	var got []rec
	for _, r := range sink.records {
		got = append(got, rec{r.Level, r.Message})
	}
	want := []rec{{slog.LevelWarn, "disk low"}, {slog.LevelInfo, "plain text"}, {slog.LevelInfo, "5"}, {slog.LevelError, "panic: boom"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log records mismatch (-want +got):\n%s", diff)
	}
	attrs := sink.waitFor(t, "disk low")
	if attrs["plugin"] != "p" || attrs["free"] != "3" {
		t.Errorf("disk low attrs = %v, want plugin=p free=3", attrs)
	}
	if !strings.Contains(w.tailText(), "last stderr lines:\n  plain text") {
		t.Errorf("tailText() = %q", w.tailText())
	}
}

func TestPluginStderrFloodIsRateLimited(t *testing.T) {
	sink := newLogSink()
	start := time.Now() // the limiter's tokens accrue from its creation
	w := newPluginStderr(slog.New(sink).With("plugin", "p"), 3)
	line := strings.Repeat("f", 1000) + "\n"
	for range 50_000 { // 50 MB, written as fast as a flooding plugin can
		w.Write([]byte(line))
	}
	logged := 0
	sink.mu.Lock()
	for _, r := range sink.records {
		logged += len(r.Message)
	}
	sink.mu.Unlock()
	elapsed := time.Since(start)
	// A few lines of slack: the limiter and this test read the clock apart.
	if bound := stderrBurst + int(elapsed.Seconds()*stderrRate) + 8*len(line); logged > bound {
		t.Errorf("a 50 MB flood logged %d bytes in %v, want at most %d", logged, elapsed, bound)
	}
	if got := w.Tail(); len(got) != 3 || got[2] != strings.TrimSpace(line) {
		t.Errorf("Tail after the flood = %d lines, want the last 3 kept", len(got))
	}
	// Once the plugin slows down, the count of lines left out is logged.
	w.limit.SetLimit(rate.Inf)
	w.Write([]byte("calm\n"))
	if attrs := sink.waitFor(t, "plugin stderr over its rate: lines left out of the log"); attrs["dropped"] == "" || attrs["dropped"] == "0" {
		t.Errorf("drop notice attrs = %v, want the count of dropped lines", attrs)
	}
}
