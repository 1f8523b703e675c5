package workers

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
)

// A worker is sent only what it lacks of a task's base. Its bid names the
// bases of its earlier tasks it holds (Bid.Bases, newest first); the
// coordinator picks the first that it offered itself (a commit of its own
// repository) and sends the bundle of the base over it: the commits a run
// landed since, a few at most, where the whole history is the project's;
// in the assignment itself when small, else stored as
// base-<base>-<basis>. A bid that names the base itself gets no bundle at
// all, and one that names none of the coordinator's bases the whole
// history, stored as base-<base>.
//
// The bid is a claim, never trusted: git fetches a bundle only into a
// repository that holds its basis, and checks every object it receives.
// A worker whose fetch fails (it no longer holds the basis, or never did)
// asks for the whole history with the award's token (TypeBase), which the
// coordinator stores then, and fetches that.

// heldMax is how many bases a worker names in its bids.
const heldMax = 8

// baseFor makes the bundle of o's base for a worker holding held and
// returns its basis (Assignment.Basis) and, when it is to travel in the
// assignment, the bundle: a bundle over a basis is most often a few
// commits, carried in the assignment when at most inlineMax; a larger one,
// and the whole history, which other workers may need too, are stored,
// unless stored already.
func (c *Coordinator) baseFor(ctx context.Context, o Offer, held []string) (string, []byte, error) {
	if c.opts.Remote != "" {
		return "", nil, nil // the worker fetches the base from the git remote
	}
	basis := c.basis(o.Base, held)
	if basis == o.Base {
		return basis, nil, nil
	}
	if basis != "" {
		data, err := c.sentBundle(ctx, o.Base, basis)
		if err != nil {
			return "", nil, err
		}
		if len(data) <= inlineMax {
			return basis, data, nil
		}
	}
	if err := c.putBase(ctx, o.Base, basis); err != nil {
		return "", nil, err
	}
	return basis, nil, nil
}

// sentMax is how many bundles sent in assignments (each at most
// inlineMax) the coordinator keeps:
// the offers of one round of tasks often share a base and a worker's
// basis, each of a worker's slots bidding before any fetched the base.
const sentMax = 16

// sentBundle is the bundle of base over basis, made once for the offers
// that need the same at about the same time.
func (c *Coordinator) sentBundle(ctx context.Context, base, basis string) ([]byte, error) {
	name := baseBundleName(base, basis)
	c.pubMu.Lock()
	data, ok := c.sent[name]
	c.pubMu.Unlock()
	if ok {
		return data, nil
	}
	var buf bytes.Buffer
	if err := c.repo.Bundle(ctx, &buf, base, basis); err != nil {
		return nil, err
	}
	if buf.Len() > inlineMax {
		return buf.Bytes(), nil // stored, not kept
	}
	c.pubMu.Lock()
	if len(c.sent) >= sentMax {
		clear(c.sent)
	}
	c.sent[name] = buf.Bytes()
	c.pubMu.Unlock()
	return buf.Bytes(), nil
}

// putting is one store of a base bundle, which the Offers needing the same
// bundle at once wait for.
type putting struct {
	done chan struct{}
	err  error
}

// putBase stores the bundle of base over basis ("": the whole history)
// once: an Offer that needs a bundle another is storing, or stored, waits
// for that store rather than store it again, which would replace the
// object under a worker reading it (its read then waits for chunks that
// are gone). A store that failed is tried again by the next Offer; a
// bundle removed (dropBase) is stored anew.
func (c *Coordinator) putBase(ctx context.Context, base, basis string) error {
	name := baseBundleName(base, basis)
	c.pubMu.Lock()
	p, ok := c.puts[name]
	if !ok {
		p = &putting{done: make(chan struct{})}
		c.puts[name] = p
	}
	c.pubMu.Unlock()
	if ok {
		select {
		case <-p.done:
			return p.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.publishedBase(base, basis)
	p.err = c.store.PutCommit(ctx, c.repo, name, base, basis)
	if p.err != nil {
		c.pubMu.Lock()
		delete(c.puts, name)
		c.pubMu.Unlock()
	}
	close(p.done)
	return p.err
}

// basis is the first of held that is base or a base this coordinator
// offered, "" when none is.
func (c *Coordinator) basis(base string, held []string) string {
	if len(held) > heldMax {
		held = held[:heldMax]
	}
	c.baseMu.Lock()
	defer c.baseMu.Unlock()
	for _, h := range held {
		if h == base || c.offered[h] {
			return h
		}
	}
	return ""
}

// sendWhole stores the whole history of the base of req's award, for its
// worker, which proves the award by its token.
func (c *Coordinator) sendWhole(ctx context.Context, req BaseRequest) error {
	_, l, held, err := c.awaited(ctx, req.Key, req.Award, req.Worker, req.Token)
	if err != nil {
		return err
	}
	if err := held(); err != nil {
		return err
	}
	return c.putBase(ctx, l.Base, "")
}

// heldBases are the bases the worker holds, newest first, for its bids.
func (a *Agent) heldBases() []string {
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	return slices.Clone(a.held)
}

// holds reports whether the worker fetched base, or found it held.
func (a *Agent) holds(base string) bool {
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	return slices.Contains(a.held, base)
}

// hold records base as held, the newest.
func (a *Agent) hold(base string) {
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	a.held = slices.DeleteFunc(a.held, func(h string) bool { return h == base })
	a.held = slices.Insert(a.held, 0, base)
	if len(a.held) > heldMax {
		a.held = a.held[:heldMax]
	}
}

// fetchStoredBase brings the assignment's base from the bundle store: the
// bundle over its basis when it has one, else, or when that bundle does
// not fetch, the whole history, asked of the coordinator then.
func (a *Agent) fetchStoredBase(ctx context.Context, as Assignment) error {
	if as.Basis == "" || as.Basis == as.Base {
		// A repository that outlived an earlier worker process may hold
		// the base already.
		if _, err := a.repo.RevParse(ctx, as.Base); err == nil {
			return nil
		}
	}
	var why error
	if as.Basis != "" && as.Basis != as.Base {
		var sha string
		var err error
		if as.Bundle != nil {
			sha, err = a.repo.UnpackBundle(ctx, as.Bundle)
		} else {
			sha, err = a.store.UnpackCommit(ctx, a.repo, baseBundleName(as.Base, as.Basis))
		}
		if err == nil && sha != as.Base {
			err = fmt.Errorf("the bundle holds %s, not the base", sha)
		}
		if err == nil {
			a.emit(Event{Type: "worker.base", Key: as.Key(), Award: as.Award, Detail: "over " + as.Basis})
			return nil
		}
		why = err
	}
	if as.Basis != "" {
		// The coordinator stored no whole history for this award: it is
		// asked to.
		ok, refused := a.request(ctx, as.Coordinator, TypeBase, BaseRequest{Key: as.Key(), Award: as.Award, Worker: a.info.Name, Token: as.Token})
		if !ok {
			if refused == "" {
				refused = "the coordinator did not answer"
			}
			return fmt.Errorf("the base over %.12s did not fetch (%v), and its whole history was refused: %s", as.Basis, why, refused)
		}
	}
	if sha, err := a.store.UnpackCommit(ctx, a.repo, baseBundleName(as.Base, "")); err != nil {
		return err
	} else if sha != as.Base {
		return fmt.Errorf("the bundle of the base holds %s, not the base", sha)
	}
	detail := "whole history"
	if why != nil {
		detail += fmt.Sprintf(", the bundle over %.12s did not fetch: %s", as.Basis, strings.Join(strings.Fields(why.Error()), " "))
	}
	a.emit(Event{Type: "worker.base", Key: as.Key(), Award: as.Award, Detail: detail})
	return nil
}
