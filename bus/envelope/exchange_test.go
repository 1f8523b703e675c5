package envelope

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/natsbus"
)

// TestRecordedExchanges replays the frames codex-weave's client sent over
// the Unix socket, each connection a raw socket, and checks every line the
// bus sends back. A connection named NAME@2 talks to a second broker on
// the same bus: both serve the same sessions.
func TestRecordedExchanges(t *testing.T) {
	files, err := filepath.Glob("testdata/exchanges/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no exchanges in testdata/exchanges: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runScript(t, f)
		})
	}
}

// TestRecordedExchangesOnNATS runs the same exchanges with each broker on
// a nats bus of its own, both joined to one embedded nats-server, as two
// `weave bus serve` processes are.
func TestRecordedExchangesOnNATS(t *testing.T) {
	files, err := filepath.Glob("testdata/exchanges/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no exchanges in testdata/exchanges: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			url := bustest.StartNATS(t).URL()
			runScriptOn(t, f, func() bus.Bus {
				ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
				defer cancel()
				nb, err := natsbus.New(ctx, url, bus.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { nb.Close() })
				return nb
			})
		})
	}
}

// runScript runs the script with both brokers on one memory bus.
func runScript(t *testing.T, path string) {
	mb, err := bus.NewMemory(bus.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mb.Close() })
	runScriptOn(t, path, func() bus.Bus { return mb })
}

// runScriptOn runs the script with two brokers, each on the bus newBus
// returns for it.
func runScriptOn(t *testing.T, path string, newBus func() bus.Bus) {
	s, err := bustest.ReadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	socks := map[string]string{}
	for _, n := range []string{"1", "2"} {
		b, err := Open(context.Background(), newBus(), Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		socks[n] = serveUnix(t, b)
	}
	conns := map[string]*rawConn{}
	for _, name := range s.Conns() {
		server := "1"
		if _, n, ok := strings.Cut(name, "@"); ok {
			server = n
		}
		conns[name] = dialRaw(t, socks[server])
	}
	caps := bustest.Captures{}
	for _, st := range s.Steps {
		c := conns[st.Conn]
		if st.Send {
			c.write(caps.Expand(st.Frame) + "\n")
			continue
		}
		c.nc.SetReadDeadline(time.Now().Add(waitLimit))
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s:%d: %s reads: %v", path, st.Line, st.Conn, err)
		}
		if err := caps.Match(st.Frame, line); err != nil {
			t.Fatalf("%s:%d: %s: %v", path, st.Line, st.Conn, err)
		}
	}
}
