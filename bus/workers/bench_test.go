package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/workers"
)

// BenchmarkOfferRoundTrip is the coordinator's cost of one task with a
// worker that does nothing but commit: publish the base, call for
// proposals, award, lease, assignment, heartbeat-free run, result bundle
// back and checked. The call for proposals closes as soon as the one
// worker has bid, so the window is a bound, not a cost. Each step is
// reported beside the whole (ms per task); coord-ms/op is the
// coordinator's own share (bundle out, offer to award, fetch and check).
func BenchmarkOfferRoundTrip(b *testing.B) {
	for _, window := range []time.Duration{20 * time.Millisecond, 300 * time.Millisecond} {
		b.Run(fmt.Sprintf("window=%s", window), func(b *testing.B) {
			w := newBenchWorld(b, window)
			ctx := context.Background()
			var sum workers.Steps
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				res, err := w.coord.Offer(ctx, w.offer(i+1, workers.Needs{}))
				if err != nil {
					b.Fatal(err)
				}
				s := res.Steps
				sum.BundleOut += s.BundleOut
				sum.Award += s.Award
				sum.BaseIn += s.BaseIn
				sum.Run += s.Run
				sum.BundleBack += s.BundleBack
				sum.Fetch += s.Fetch
			}
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
			b.ReportMetric(ms(time.Since(start)), "ms/task")
			b.ReportMetric(ms(sum.Overhead()), "coord-ms/op")
			b.ReportMetric(ms(sum.BundleOut), "bundle-out-ms/op")
			b.ReportMetric(ms(sum.Award), "award-ms/op")
			b.ReportMetric(ms(sum.BaseIn), "base-in-ms/op")
			b.ReportMetric(ms(sum.Run), "run-ms/op")
			b.ReportMetric(ms(sum.BundleBack), "bundle-back-ms/op")
			b.ReportMetric(ms(sum.Fetch), "fetch-ms/op")
		})
	}
}
