package workers_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weavehq/weave/bus/workers"
)

// advance makes a commit on the coordinator's main branch, as a landing
// does, and returns it.
func (w *world) advance(t *testing.T, file string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.repo.Root, file), []byte(file+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, w.repo.Root, "add", file)
	git(t, w.repo.Root, "commit", "-q", "-m", "land "+file)
	head, _, _ := w.repo.Head(context.Background())
	return head
}

// baseEvents are the details of the worker.base events of task key.
func (w *world) baseEvents(key string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range w.events {
		if e.Type == "worker.base" && e.Key == key {
			out = append(out, e.Detail)
		}
	}
	return out
}

// runOn offers task n on base and checks its commit builds on it.
func (w *world) runOn(t *testing.T, n int, base string) {
	t.Helper()
	o := w.offer(n, workers.Needs{})
	o.Base = base
	res, err := w.coord.Offer(ctxT(t), o)
	if err != nil {
		t.Fatalf("task %d: %v", n, err)
	}
	if got := git(t, w.repo.Root, "rev-parse", res.Commit+"^"); got != base {
		t.Fatalf("task %d's commit builds on %s, want %s", n, got, base)
	}
}

// TestWorkerIsSentWhatItLacks: a worker that ran a task on one integration
// head fetches, for a task on a later head, only the commits it lacks
// (through the store when they are large, in the assignment when not); a
// worker that no longer holds the head its bid names (its repository lost
// it, or it lied) fails to fetch that bundle and gets the whole history
// instead, and the task runs; nobody without the award's token gets a
// whole history stored.
func TestWorkerIsSentWhatItLacks(t *testing.T) {
	w := newWorld(t, 5*time.Second)
	wrepo := newRepo(t, false)
	b := newBus(t, w.ns.URL())
	a, err := workers.Join(context.Background(), b, b.JetStream(), wrepo, workers.Info{Name: "far", Slots: 1}, commitTask("far"), workers.AgentOptions{Events: w.record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })

	w.runOn(t, 1, w.base)
	if got := w.baseEvents("p.1"); len(got) != 1 || got[0] != "whole history" {
		t.Fatalf("task 1's base came as %q, want the whole history (the worker held nothing)", got)
	}
	// A landing of a large file: the bundle over the worker's base is too
	// large to travel in the assignment, and goes through the store.
	big := make([]byte, 400<<10)
	_, _ = rand.Read(big)
	if err := os.WriteFile(filepath.Join(w.repo.Root, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, w.repo.Root, "add", "big.bin")
	b1 := w.advance(t, "b1.txt")
	w.runOn(t, 2, b1)
	if got := w.baseEvents("p.2"); len(got) != 1 || got[0] != "over "+w.base {
		t.Fatalf("task 2's base came as %q, want it over %s, the base the worker held", got, w.base)
	}
	// A task on a base the worker holds fetches nothing.
	w.runOn(t, 3, b1)
	if got := w.baseEvents("p.3"); len(got) != 0 {
		t.Fatalf("task 3's base came as %q, want nothing fetched", got)
	}

	// The worker's repository loses everything it had; its bids still
	// name the bases it fetched.
	for _, wt := range strings.Fields(git(t, wrepo.Root, "worktree", "list", "--porcelain")) {
		if strings.Contains(wt, filepath.Join(".weave", "worktrees")) {
			git(t, wrepo.Root, "worktree", "remove", "--force", wt)
		}
	}
	for _, ref := range strings.Fields(git(t, wrepo.Root, "for-each-ref", "--format=%(refname)")) {
		git(t, wrepo.Root, "update-ref", "-d", ref)
	}
	git(t, wrepo.Root, "reflog", "expire", "--expire=now", "--all")
	git(t, wrepo.Root, "gc", "-q", "--prune=now")
	if _, err := wrepo.RevParse(context.Background(), b1); err == nil {
		t.Fatal("the worker's repository still holds the base")
	}
	b2 := w.advance(t, "b2.txt")
	w.runOn(t, 4, b2)
	got := w.baseEvents("p.4")
	if len(got) != 1 || !strings.HasPrefix(got[0], "whole history, the bundle over "+b1[:12]+" did not fetch") {
		t.Fatalf("task 4's base came as %q, want the whole history after the bundle over %s failed", got, b1)
	}

	// A peer without the award's token cannot have the coordinator store
	// anything.
	mb := newBus(t, w.ns.URL())
	ctx := ctxT(t)
	started := make(chan string, 1)
	w.join("slow", []string{"slow"}, blocking(started, "slow"))
	o := w.offer(5, workers.Needs{Labels: []string{"slow"}})
	go func() { _, _ = w.coord.Offer(ctx, o) }()
	award := <-started
	req := workers.BaseRequest{Key: "p.5", Award: award, Worker: "slow", Token: "guess"}
	if ack := send(t, mb, "coord", workers.TypeBase, req); ack.Processed || !strings.Contains(ack.Message, "token") {
		t.Fatalf("base request without the award's token: ack %+v, want refused for its token", ack)
	}
}

// TestBaseStoredOnceForOffersAtOnce: four tasks on one base offered at
// once to a worker that holds nothing each need its whole history; it is
// stored once, not once per offer, which replaced the object under the
// worker reading it (the read then waited out its timeout for chunks that
// were gone), and every task runs.
func TestBaseStoredOnceForOffersAtOnce(t *testing.T) {
	w := newWorld(t, 5*time.Second)
	b := newBus(t, w.ns.URL())
	a, err := workers.Join(context.Background(), b, b.JetStream(), newRepo(t, false), workers.Info{Name: "far", Slots: 4}, commitTask("far"), workers.AgentOptions{Events: w.record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx := ctxT(t)
	obs, err := b.JetStream().ObjectStore(ctx, workers.BundleStore)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := obs.Watch(ctx, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	errs := make(chan error, 4)
	for n := 1; n <= 4; n++ {
		go func() {
			_, err := w.coord.Offer(ctx, w.offer(n, workers.Needs{}))
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	name := "base-" + w.base
	stores := 0
	// Every offer has returned, so every store is made: the watch reports
	// the first however late it comes, then any other in the quiet after.
	quiet := time.After(30 * time.Second)
	for {
		select {
		case info := <-watch.Updates():
			if info != nil && info.Name == name && !info.Deleted {
				stores++
				quiet = time.After(200 * time.Millisecond)
			}
			continue
		case <-quiet:
		}
		break
	}
	if stores != 1 {
		t.Fatalf("the base's bundle was stored %d times, want once", stores)
	}
}
