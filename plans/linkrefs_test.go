package plans

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
)

// linkRefPlan is a plan with one task and n link reference definitions in
// one paragraph after it.
func linkRefPlan(n int) []byte {
	var b bytes.Buffer
	b.WriteString("# Refs\n\n## TODOs\n\n- [ ] 1. The task\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "[l%d]: http://x/%d\n", i, i)
	}
	b.WriteString("**Estimated Effort**: Short\n")
	return b.Bytes()
}

func TestLinkRefsAreTakenOffTheParagraph(t *testing.T) {
	p := Parse(linkRefPlan(1000))
	if len(p.Tasks) != 1 || p.Tasks[0].Title != "The task" {
		t.Fatalf("tasks = %+v, want the one task", p.Tasks)
	}
	// The paragraph's line after the definitions is still read.
	if p.Effort != "Short" || p.EffortLine != 1007 {
		t.Fatalf("effort = %q on line %d, want Short on line 1007", p.Effort, p.EffortLine)
	}
}

// cancelAfter is a context whose Err is nil for its first n calls, then
// context.Canceled: it stands for a Ctrl-C that arrives mid-parse.
type cancelAfter struct {
	context.Context
	n, calls atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) > c.n.Load() {
		return context.Canceled
	}
	return nil
}

func TestParseContextStopsMidParse(t *testing.T) {
	src := linkRefPlan(200_000)
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(2) // before the parse, then once among the definitions
	p, err := ParseContext(ctx, src)
	if !errors.Is(err, context.Canceled) || p != nil {
		t.Fatalf("ParseContext = %v, %v; want no plan and context.Canceled", p, err)
	}
	// The definitions were left after the first look that saw the
	// cancellation, not read to the end: one look per checkEvery.
	if c := ctx.calls.Load(); c != 4 {
		t.Fatalf("the context was consulted %d times, want 4 (before, twice among the definitions, after)", c)
	}

	ctx = &cancelAfter{Context: context.Background()}
	ctx.n.Store(1 << 40)
	if p, err := ParseContext(ctx, src); err != nil || len(p.Tasks) != 1 {
		t.Fatalf("ParseContext with a live context = %v, %v", p, err)
	}
}

// BenchmarkParseLinkRefs parses plans of 10,000 and 100,000 link reference
// definitions: the time per definition (ns/op over defs) stays flat.
func BenchmarkParseLinkRefs(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		src := linkRefPlan(n)
		b.Run("defs="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if p := Parse(src); len(p.Tasks) != 1 {
					b.Fatalf("tasks = %d, want 1", len(p.Tasks))
				}
			}
		})
	}
}
