package workers

import (
	"context"
	"errors"
	"slices"
	"time"
)

// What no live award needs leaves the bundle store (WEAVE_BUNDLES):
//
//   - a result once the Offer took it (its commit is in the repository),
//     and its log once the caller has read it (Forget);
//   - the result and the log of an award this coordinator took back (its
//     worker lost it, the call was cancelled, or TakeBack released it) at
//     once, and again when that worker's late result is refused, since it
//     may store them after the first removal;
//   - a base bundle once no Offer of this coordinator is using it and no
//     lease, of any run, names it;
//   - everything this coordinator stored or took back, when it closes: the
//     run is over.
//
// Only the objects of this coordinator's own awards go: a result naming
// another award, whoever sends it, removes nothing. A coordinator of
// another run on the same bus whose offer of the same base is between its
// call for proposals and its lease can lose its base bundle to this one's
// removal; the worker's fetch then fails, and the task is offered again.

// gcTimeout bounds a removal done when nobody waits (Close).
const gcTimeout = 5 * time.Second

// useBase marks base as used by an Offer of this coordinator until the
// returned release, after which its bundle is removed, away from the
// Offer's path, once nothing needs it anymore.
func (c *Coordinator) useBase(base string) (release func()) {
	c.baseMu.Lock()
	c.bases[base]++
	c.offered[base] = true
	c.baseMu.Unlock()
	return func() {
		c.baseMu.Lock()
		c.bases[base]--
		unused := c.bases[base] <= 0
		if unused {
			delete(c.bases, base)
		}
		// Counted under baseMu, before Close can wait: a WaitGroup must
		// not be added to while it is waited for.
		closing := c.closing
		if unused && !closing {
			c.gcWG.Add(1)
		}
		c.baseMu.Unlock()
		if !unused {
			return
		}
		drop := func() {
			ctx, cancel := context.WithTimeout(context.Background(), gcTimeout)
			defer cancel()
			c.dropBase(ctx, base)
		}
		if closing {
			// An Offer ending while the coordinator closes: nothing
			// would wait for the removal.
			drop()
			return
		}
		go func() {
			defer c.gcWG.Done()
			drop()
		}()
	}
}

// dropBase removes base's bundle unless a lease names it or an Offer of
// this coordinator uses it. The removal and the check of the Offers are
// one step under baseMu: an Offer that starts to use the base after it
// stores the bundle again.
func (c *Coordinator) dropBase(ctx context.Context, base string) {
	// Most bases are sent in their assignments, never stored: nothing to
	// remove, and no need to read every lease to know it. An Offer that
	// stores one after this look releases the base again when it ends.
	c.pubMu.Lock()
	none := len(c.published[base]) == 0
	if none {
		delete(c.published, base)
	}
	c.pubMu.Unlock()
	if none {
		return
	}
	all, err := c.leases.All(ctx)
	if err != nil {
		return // judged again when the run closes
	}
	for _, l := range all {
		if l.Base == base {
			return
		}
	}
	c.baseMu.Lock()
	defer c.baseMu.Unlock()
	if c.bases[base] > 0 {
		return
	}
	c.pubMu.Lock()
	stored := c.published[base]
	// What is removed is stored anew when an Offer needs it again.
	for _, basis := range stored {
		delete(c.puts, baseBundleName(base, basis))
	}
	c.pubMu.Unlock()
	for _, basis := range stored {
		err = errors.Join(err, c.store.Delete(ctx, baseBundleName(base, basis)))
	}
	if err == nil {
		c.pubMu.Lock()
		delete(c.published, base)
		c.pubMu.Unlock()
	}
}

// publishedBase records that a bundle of base over basis ("": the whole
// history) may have been stored by this coordinator; basis base itself is
// no bundle.
func (c *Coordinator) publishedBase(base, basis string) {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	have := c.published[base]
	if basis != base && !slices.Contains(have, basis) {
		have = append(have, basis)
	}
	c.published[base] = have
}

// Forget removes the result and the log of an award whose Offer returned,
// once the caller has read the log.
func (c *Coordinator) Forget(ctx context.Context, award string) {
	if award == "" {
		return
	}
	_ = c.store.Delete(ctx, bundleName("result", award))
	_ = c.store.Delete(ctx, bundleName("log", award))
}

// awarded records award as this coordinator's.
func (c *Coordinator) awarded(award string) {
	c.mu.Lock()
	c.awards[award] = true
	c.mu.Unlock()
}

// takenBack removes the objects of an award taken back.
func (c *Coordinator) takenBack(ctx context.Context, award string) {
	c.awarded(award)
	c.Forget(ctx, award)
}

// refusedLate removes the objects of a refused result when its award is
// one this coordinator made and no longer waits for: the worker stored
// them after the award was taken back. A refused result of an award still
// waited for (a second one, a wrong token) removes nothing: the award's
// own may be there.
func (c *Coordinator) refusedLate(ctx context.Context, award string) {
	c.mu.Lock()
	_, waiting := c.waiting[award]
	gone := c.awards[award] && !waiting
	c.mu.Unlock()
	if gone {
		c.Forget(ctx, award)
	}
}

// dropBases removes the bundles of bases that nothing uses anymore.
func (c *Coordinator) dropBases(ctx context.Context, bases []string) {
	for _, b := range bases {
		c.dropBase(ctx, b)
	}
}

// sweep removes, when the coordinator closes, what its run left in the
// store: the objects of every award it made or took back and every base
// bundle it stored that no lease names.
func (c *Coordinator) sweep() {
	c.baseMu.Lock()
	c.closing = true
	c.baseMu.Unlock()
	c.gcWG.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), gcTimeout)
	defer cancel()
	c.mu.Lock()
	awards := make([]string, 0, len(c.awards))
	for a := range c.awards {
		awards = append(awards, a)
	}
	c.mu.Unlock()
	for _, a := range awards {
		c.Forget(ctx, a)
	}
	c.pubMu.Lock()
	bases := make([]string, 0, len(c.published))
	for b := range c.published {
		bases = append(bases, b)
	}
	c.pubMu.Unlock()
	c.dropBases(ctx, bases)
}
