//go:build torture

package envelope

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
)

// medianLatency times n session.create requests on the HTTP face.
func medianLatency(t *testing.T, url string, n int) time.Duration {
	t.Helper()
	client := &http.Client{Timeout: bustest.Deadline}
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		resp, err := client.Post(url+"/api/sessions", "application/json", strings.NewReader(`{"name":"s"}`))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[n/2]
}

// TestTortureSilentSessionSubscriber prints the latency of a normal HTTP
// request beside the idle figure while a session:* subscriber never
// answers, and fails only when it is far off (the stall measured before
// was 1 s against 0.36 ms).
func TestTortureSilentSessionSubscriber(t *testing.T) {
	idleBroker := newTestBroker(t, Options{Logger: quietLogger()})
	idle := medianLatency(t, httpServer(t, idleBroker).URL, 200)
	b, _, _ := silentBroker(t)
	silent := medianLatency(t, httpServer(t, b).URL, 200)
	t.Logf("torture silent session:* subscriber: median request latency idle %v, with the silent subscriber %v", idle, silent)
	if silent > 20*idle+50*time.Millisecond {
		t.Errorf("median latency with a silent subscriber %v, idle %v: the broker waits for it", silent, idle)
	}
}
