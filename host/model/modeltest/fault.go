package modeltest

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// Faults a turn can script (Turn.Fault). Each answers 200 and then breaks
// the answer, in the format the client asked for; a request that is not
// streamed gets the same bytes as its body.
const (
	// FaultEndless streams text deltas of FaultChunk bytes (64 KiB by
	// default) without end: until the client goes away or, when
	// FaultBytes is set, until that many bytes of text are out, when the
	// connection is dropped.
	FaultEndless = "endless"
	// FaultHuge streams one whole, properly finished answer of FaultBytes
	// bytes of text (64 MiB by default) in FaultChunk pieces.
	FaultHuge = "huge"
	// FaultCut streams the first half of the turn's text, then ends the
	// body cleanly, without the finish event.
	FaultCut = "cut"
	// FaultAbort streams the first half of the turn's text, then drops the
	// connection mid-body.
	FaultAbort = "abort"
	// FaultGarbage answers FaultBytes (64 KiB by default) random bytes as
	// an SSE stream.
	FaultGarbage = "garbage"
)

// fault writes a's faulty answer and returns how many bytes it wrote.
func (a answer) fault(w http.ResponseWriter, r *http.Request, format string) int64 {
	fw := &faultWriter{w: w, r: r}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := a.turn.FaultChunk
	if chunk <= 0 {
		chunk = 64 << 10
	}
	switch a.turn.Fault {
	case FaultGarbage:
		n := a.turn.FaultBytes
		if n <= 0 {
			n = 64 << 10
		}
		rng := rand.New(rand.NewPCG(uint64(a.n), 23))
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		fw.write(b)
		return fw.n
	case FaultCut, FaultAbort:
		fw.write(a.faultStart(format))
		ws := words(a.turn.Text)
		for _, t := range ws[:len(ws)/2] {
			if !fw.write(a.faultDelta(format, t)) {
				return fw.n
			}
		}
		if a.turn.Fault == FaultAbort {
			// The server drops the connection without ending the body.
			panic(http.ErrAbortHandler)
		}
		return fw.n
	case FaultEndless, FaultHuge:
		total := a.turn.FaultBytes
		if total <= 0 && a.turn.Fault == FaultHuge {
			total = 64 << 20
		}
		// One chunk's bytes, made once: the server's own work stays small
		// beside the client's, whose memory a test measures.
		delta := a.faultDelta(format, strings.Repeat("x", chunk))
		fw.write(a.faultStart(format))
		for sent := 0; total <= 0 || sent < total; sent += chunk {
			d := delta
			if total > 0 && total-sent < chunk {
				d = a.faultDelta(format, strings.Repeat("x", total-sent))
			}
			if !fw.write(d) {
				return fw.n
			}
		}
		if a.turn.Fault == FaultEndless {
			panic(http.ErrAbortHandler)
		}
		fw.write(a.faultFinish(format))
		return fw.n
	}
	panic(fmt.Sprintf("modeltest: unknown fault %q", a.turn.Fault))
}

// faultWriter writes and flushes each piece, until the client
// has gone.
type faultWriter struct {
	w http.ResponseWriter
	r *http.Request
	n int64
}

func (f *faultWriter) write(b []byte) bool {
	if f.r.Context().Err() != nil {
		return false
	}
	n, err := f.w.Write(b)
	f.n += int64(n)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return err == nil && f.r.Context().Err() == nil
}

func sse(event string, data string) []byte {
	if event != "" {
		return []byte("event: " + event + "\ndata: " + data + "\n\n")
	}
	return []byte("data: " + data + "\n\n")
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (a answer) faultStart(format string) []byte {
	if format == "anthropic" {
		return append(sse("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_fake_%d","type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`, a.n, jsonString(a.model))),
			sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)...)
	}
	return sse("", fmt.Sprintf(`{"id":"chatcmpl-fake-%d","object":"chat.completion.chunk","created":%d,"model":%s,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, a.n, time.Now().Unix(), jsonString(a.model)))
}

func (a answer) faultDelta(format, text string) []byte {
	if format == "anthropic" {
		return sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+jsonString(text)+`}}`)
	}
	return sse("", fmt.Sprintf(`{"id":"chatcmpl-fake-%d","object":"chat.completion.chunk","created":%d,"model":%s,"choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`, a.n, time.Now().Unix(), jsonString(a.model), jsonString(text)))
}

func (a answer) faultFinish(format string) []byte {
	if format == "anthropic" {
		return append(append(sse("content_block_stop", `{"type":"content_block_stop","index":0}`),
			sse("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, a.usage.Output))...),
			sse("message_stop", `{"type":"message_stop"}`)...)
	}
	return append(sse("", fmt.Sprintf(`{"id":"chatcmpl-fake-%d","object":"chat.completion.chunk","created":%d,"model":%s,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, a.n, time.Now().Unix(), jsonString(a.model))),
		sse("", "[DONE]")...)
}
