package envelope

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"slices"
	"testing"
	"time"
)

// reportP50 records the median of the measured round trips as p50-ns.
func reportP50(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkRoundTrip compares one envelope command round trip over the Unix
// socket (message.created: validate, record, fan out, reply) against the
// floor: a bare newline echo over a Unix socket with a line of the same size.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("envelope-uds", func(b *testing.B) {
		br := NewBroker(Options{Logger: quietLogger()})
		path := benchSock(b)
		l, err := ListenUnix(path)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { br.Serve(ctx, l); close(done) }()
		defer func() { cancel(); <-done }()
		c, err := Dial(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		s := benchDo(b, c, Envelope{Type: TypeSessionCreate, Src: "bench"}).Session
		benchDo(b, c, Envelope{Type: TypeAgentAdd, Src: "bench", Session: s})
		payload, _ := json.Marshal(Message{Text: "hello from the benchmark", Kind: KindUser})
		lat := make([]time.Duration, 0, 1<<16)
		for b.Loop() {
			start := time.Now()
			benchDo(b, c, Envelope{Type: TypeMessageCreated, Src: "bench", Session: s, Payload: payload})
			lat = append(lat, time.Since(start))
		}
		reportP50(b, lat)
	})
	// The same command from a client that writes and reads raw lines: the
	// server's share of the round trip, without the Go client's decoding and
	// hand-off.
	b.Run("envelope-uds-raw-client", func(b *testing.B) {
		br := NewBroker(Options{Logger: quietLogger()})
		path := benchSock(b)
		l, err := ListenUnix(path)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { br.Serve(ctx, l); close(done) }()
		defer func() { cancel(); <-done }()
		s := br.Handle(ctx, Envelope{V: 1, Type: TypeSessionCreate, ID: NewID(), Src: "bench"})[0].Session
		nc, err := net.Dial("unix", path)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		line, _ := json.Marshal(Envelope{V: 1, Type: TypeMessageCreated, ID: NewID(), TS: FormatTime(time.Now()),
			Src: "bench", Session: s, Payload: json.RawMessage(`{"text":"hello from the benchmark","kind":"user"}`)})
		line = append(line, '\n')
		lineRoundTrips(b, nc, line)
	})
	b.Run("bare-echo-uds", func(b *testing.B) {
		path := benchSock(b)
		l, err := net.Listen("unix", path)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		go func() {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			r := bufio.NewReader(nc)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if _, err := nc.Write(line); err != nil {
					return
				}
			}
		}()
		nc, err := net.Dial("unix", path)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		// A line as long as the envelope request above.
		req, _ := json.Marshal(Envelope{V: 1, Type: TypeMessageCreated, ID: NewID(), TS: FormatTime(time.Now()),
			Src: "bench", Session: NewID(), Seq: 1000,
			Payload: json.RawMessage(`{"text":"hello from the benchmark","kind":"user"}`)})
		line := append(req, '\n')
		lineRoundTrips(b, nc, line)
	})
	b.Run("handle-in-process", func(b *testing.B) {
		br := NewBroker(Options{Logger: quietLogger()})
		ctx := context.Background()
		s := br.Handle(ctx, Envelope{V: 1, Type: TypeSessionCreate, ID: NewID(), Src: "bench"})[0].Session
		payload, _ := json.Marshal(Message{Text: "hello from the benchmark", Kind: KindUser})
		lat := make([]time.Duration, 0, 1<<16)
		for b.Loop() {
			start := time.Now()
			r := br.Handle(ctx, Envelope{V: 1, Type: TypeMessageCreated, ID: NewID(), Src: "bench", Session: s, Payload: payload})
			if r[0].Err() != nil {
				b.Fatal(r[0].Err())
			}
			lat = append(lat, time.Since(start))
		}
		reportP50(b, lat)
	})
}

// lineRoundTrips writes line and reads one line back, b.N times, on one
// goroutine, and reports the p50: how both the floor and the raw-client
// face are measured.
func lineRoundTrips(b *testing.B, nc net.Conn, line []byte) {
	r := bufio.NewReader(nc)
	lat := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		start := time.Now()
		if _, err := nc.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportP50(b, lat)
}

func benchDo(b *testing.B, c *Client, e Envelope) Envelope {
	r, err := c.Do(context.Background(), e)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	return r
}

func benchSock(b *testing.B) string { return sockPath(b) }
