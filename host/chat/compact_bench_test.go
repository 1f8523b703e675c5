package chat

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSessionMemory reports the heap a chat session holds in the host
// (retained-B) after so many turns, compactions included: bounded by the
// model's window, not by the number of turns.
func BenchmarkSessionMemory(b *testing.B) {
	for _, turns := range []int{100, 1000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			var retained uint64
			for range b.N {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				m, _ := newEchoService(b.TempDir(), 8000)
				chatTurns(b, m, "mem", turns)
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(m)
				if after.HeapAlloc > before.HeapAlloc {
					retained += after.HeapAlloc - before.HeapAlloc
				}
			}
			b.ReportMetric(float64(retained)/float64(b.N), "retained-B")
		})
	}
}
