package supervisor

import (
	"context"
	"sync"
)

// Warm starts the named plugins concurrently and returns once each has
// started or failed. A run calls it in the background for the plugins its
// first task needs anyway, so that their start-up overlaps the run's own
// preparation instead of adding up one event at a time. A plugin that fails
// to start is left for its first call to report.
func (s *Supervisor) Warm(ctx context.Context, names ...string) {
	var wg sync.WaitGroup
	for _, name := range names {
		p, err := s.lookup(name)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = p.get(ctx)
		}()
	}
	wg.Wait()
}
