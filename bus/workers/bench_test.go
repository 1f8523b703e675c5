package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/workers"
)

// BenchmarkOfferRoundTrip is the coordinator's cost of one task with a
// worker that does nothing but commit: publish the base (once), call for
// proposals, award, lease, assignment, heartbeat-free run, result bundle
// back and checked. The bid window is part of it; the figure reported
// beside is the cost without the window.
func BenchmarkOfferRoundTrip(b *testing.B) {
	for _, window := range []time.Duration{20 * time.Millisecond, 100 * time.Millisecond} {
		b.Run(fmt.Sprintf("window=%s", window), func(b *testing.B) {
			w := newBenchWorld(b, window)
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := w.coord.Offer(ctx, w.offer(i+1, workers.Needs{})); err != nil {
					b.Fatal(err)
				}
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64((per-window).Microseconds())/1000, "ms-beyond-window/op")
		})
	}
}
