package model_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/model/modeltest"
)

// allocated runs f and returns how many bytes the process allocated while
// it ran: what an answer cost, by the runtime's own accounting.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestEndlessStreamIsBounded: an endpoint that streams 64 KiB deltas
// without end fails the call once the answer passes its byte cap (or, for
// Anthropic, its default max_tokens), having cost a bounded amount of
// memory. The server stops at 256 MiB, so that code without the bound ends
// too, with a quarter of a gigabyte read.
func TestEndlessStreamIsBounded(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := modeltest.NewServer(t, modeltest.Turn{Fault: modeltest.FaultEndless, FaultBytes: 256 << 20})
			p := open(t, kind, srv)
			var err error
			var got deltas
			cost := allocated(func() {
				_, err = p.Complete(ctx(t), userChat("hi"), got.on)
			})
			if !errors.Is(err, model.ErrAnswerTooLong) {
				t.Fatalf("Complete = %v, want an error wrapping ErrAnswerTooLong", err)
			}
			if !strings.Contains(err.Error(), "model.base_url") {
				t.Errorf("error %q does not say what to check", err)
			}
			streamed := len(strings.Join(got.text, ""))
			if streamed > model.MaxAnswerBytes {
				t.Errorf("%d bytes of text reached the caller, want at most MaxAnswerBytes (%d)", streamed, model.MaxAnswerBytes)
			}
			if cost > 64<<20 {
				t.Errorf("the call allocated %d MiB, want at most 64 MiB", cost>>20)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1: an answer past its bounds is not asked again", n)
			}
			t.Logf("%s: %v; %d bytes streamed to the caller, %d MiB allocated, server wrote %d MiB", kind, err, streamed, cost>>20, srv.FaultBytesSent()>>20)
		})
	}
}

// TestMaxTokensIsEnforcedOnTheStream: tiny deltas without end fail the call
// soon after the answer holds more pieces than max_tokens allows.
func TestMaxTokensIsEnforcedOnTheStream(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := modeltest.NewServer(t, modeltest.Turn{Fault: modeltest.FaultEndless, FaultChunk: 3, FaultBytes: 16 << 20})
			p := open(t, kind, srv)
			req := userChat("hi")
			req.MaxTokens = 100
			var got deltas
			_, err := p.Complete(ctx(t), req, got.on)
			if !errors.Is(err, model.ErrAnswerTooLong) || !strings.Contains(err.Error(), "max_tokens 100") {
				t.Fatalf("Complete = %v, want ErrAnswerTooLong naming max_tokens 100", err)
			}
			if n := len(got.text); n > 150 {
				t.Errorf("%d deltas reached the caller for max_tokens 100, want at most 150", n)
			}
		})
	}
}

// TestHugeFinishedAnswerIsRefused: a whole, properly finished answer of
// 64 MiB is past the byte cap.
func TestHugeFinishedAnswerIsRefused(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.Turn{Fault: modeltest.FaultHuge})
	p := open(t, "openai", srv)
	var err error
	cost := allocated(func() { _, err = p.Complete(ctx(t), userChat("hi"), func(model.Delta) {}) })
	if !errors.Is(err, model.ErrAnswerTooLong) {
		t.Fatalf("Complete = %v, want ErrAnswerTooLong", err)
	}
	if cost > 64<<20 {
		t.Errorf("the call allocated %d MiB, want at most 64 MiB", cost>>20)
	}
}

// TestCutStreamIsNeverAnAnswer: a stream that ends before its finish event
// (cleanly, by a dropped connection, or as random bytes) is asked again
// like a 5xx, and reported when every try was cut; never taken as the
// answer.
func TestCutStreamIsNeverAnAnswer(t *testing.T) {
	faults := []string{modeltest.FaultCut, modeltest.FaultAbort, modeltest.FaultGarbage}
	for _, kind := range providers {
		for _, fault := range faults {
			t.Run(kind+"/"+fault, func(t *testing.T) {
				t.Parallel()
				turn := modeltest.Turn{Fault: fault, Text: "This answer is cut in the middle of its sentence."}
				srv := modeltest.NewServer(t, turn, turn, turn)
				p := open(t, kind, srv) // two retries
				var got deltas
				resp, err := p.Complete(ctx(t), userChat("hi"), got.on)
				if !errors.Is(err, model.ErrStreamCut) {
					t.Fatalf("Complete = %+v, %v; want an error wrapping ErrStreamCut", resp, err)
				}
				if !strings.Contains(err.Error(), "tried 3 times") {
					t.Errorf("error %q does not say how often it tried", err)
				}
				if n := len(srv.Requests()); n != 3 {
					t.Errorf("%d requests, want 3 (two retries)", n)
				}
			})
		}
	}
	for _, kind := range providers {
		t.Run(kind+"/cut then whole", func(t *testing.T) {
			srv := modeltest.NewServer(t,
				modeltest.Turn{Fault: modeltest.FaultAbort, Text: "Half of a first answer that never ends."},
				modeltest.Turn{Text: "The whole answer."})
			p := open(t, kind, srv)
			var retries []string
			var text strings.Builder
			resp, err := p.Complete(ctx(t), userChat("hi"), func(d model.Delta) {
				if d.Retry != "" {
					retries = append(retries, d.Retry)
					text.Reset()
				}
				text.WriteString(d.Text)
			})
			if err != nil || resp.Message.Content != "The whole answer." || text.String() != "The whole answer." {
				t.Fatalf("Complete = %q, %v, streamed %q after the retry; want the second answer", resp.Message.Content, err, text.String())
			}
			if len(retries) != 1 || !strings.Contains(retries[0], "asking again") {
				t.Errorf("retry deltas %q, want one saying the call is asked again", retries)
			}
		})
	}
	t.Run("openai/garbage not streamed", func(t *testing.T) {
		turn := modeltest.Turn{Fault: modeltest.FaultGarbage}
		srv := modeltest.NewServer(t, turn, turn, turn)
		_, err := open(t, "openai", srv).Complete(ctx(t), userChat("hi"), nil)
		if !errors.Is(err, model.ErrStreamCut) {
			t.Fatalf("Complete = %v, want ErrStreamCut", err)
		}
	})
}

// TestResponseByteCap: bytes the host does not read as an answer (here
// random bytes, lines the SSE decoder skips) still count: past
// MaxResponseBytes the call fails, and is not asked again.
func TestResponseByteCap(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := modeltest.NewServer(t, modeltest.Turn{Fault: modeltest.FaultGarbage, FaultBytes: model.MaxResponseBytes + 1<<20})
			// 65 MiB through the SDK's decoder takes seconds, and under the
			// race detector on a busy machine far more: the guard is wide.
			c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			_, err := open(t, kind, srv).Complete(c, userChat("hi"), func(model.Delta) {})
			if !errors.Is(err, model.ErrAnswerTooLong) || !strings.Contains(err.Error(), "cap on one response") {
				t.Fatalf("Complete = %v, want ErrAnswerTooLong naming the response cap", err)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}
