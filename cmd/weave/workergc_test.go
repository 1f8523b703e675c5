package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/workers"
)

// storedBundles names what the bundle store on the NATS at url holds.
func storedBundles(t *testing.T, url string) []string {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obs, err := js.ObjectStore(ctx, workers.BundleStore)
	if err != nil {
		t.Fatal(err)
	}
	list, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list {
		names = append(names, o.Name)
	}
	return names
}

// TestFinishedRunLeavesNoBundles: once a run with a remote worker is done,
// the bundle store holds none of its bases, results or logs.
func TestFinishedRunLeavesNoBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	startWorker(t, url, "big", "--labels", "gpu")
	plan := "# Far\n\n## TODOs\n\n" +
		"- [ ] 1. One [needs: gpu]\n  ```sh\n  echo one > one.txt\n  ```\n" +
		"- [ ] 2. Two\n  ```sh\n  echo two > two.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"far": plan}, map[string]string{"README": "hi\n"})
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "far", "--workers", "2", "--bus", url, "--json")
	if code != 0 {
		t.Fatalf("start-work --workers 2 --bus = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if p := planOf(t, dir, "far"); strings.Count(p, "- [x]") != 2 {
		t.Fatalf("plan after the run:\n%s\nwant 2 ticks", p)
	}
	if got := storedBundles(t, url); len(got) > 0 {
		t.Errorf("the bundle store still holds %v after the run finished", got)
	}
}
