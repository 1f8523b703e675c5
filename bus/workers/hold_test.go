package workers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/weavehq/weave/bus/bustest"
)

// TestHoldRetryAsksTheSameRequest: a coordinator whose first answer to a
// hold never arrives (busy, the reply lost) is asked again; the retry
// carries the same request ID, which the coordinator answers as it did
// (host/remote), and the next call's request another: one call is held
// once.
func TestHoldRetryAsksTheSameRequest(t *testing.T) {
	ns := bustest.StartNATS(t)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	var ids []string
	sub, err := nc.Subscribe(holdPattern("coord"), func(m *nats.Msg) {
		var req HoldRequest
		_ = json.Unmarshal(m.Data, &req)
		mu.Lock()
		ids = append(ids, req.ID)
		n := len(ids)
		mu.Unlock()
		if n == 1 {
			return // the first answer is lost: the worker asks again
		}
		data, _ := json.Marshal(HoldReply{Granted: true, Hold: "h-" + req.ID})
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	wc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	as := Assignment{Offer: Offer{Run: "p", Task: 1, Budget: &Allowance{USD: 1}}, Award: "a1", Coordinator: "coord", Lease: 10 * time.Second, Token: "tok"}
	h := HoldsFor(withHolds(context.Background(), wc, "w", as))
	first, _, err := h.Hold(context.Background(), "m", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Hold(context.Background(), "m", 0.5); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 3 {
		t.Fatalf("the coordinator was asked %d times (%q), want 3: once lost, once again, once for the next call", len(ids), ids)
	}
	if ids[0] == "" || ids[0] != ids[1] {
		t.Errorf("a retried hold was asked as %q then %q, want one request ID", ids[0], ids[1])
	}
	if ids[2] == ids[0] {
		t.Errorf("the next call's hold reused request ID %q", ids[2])
	}
	if first != "h-"+ids[0] {
		t.Errorf("the hold granted is %q", first)
	}
}

// TestSettleNobodyAnswersIsNotANoHold: a settle nobody answers says so,
// not that the call could not be held (it was).
func TestSettleNobodyAnswersIsNotANoHold(t *testing.T) {
	ns := bustest.StartNATS(t)
	wc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	as := Assignment{Offer: Offer{Run: "p", Task: 1, Budget: &Allowance{USD: 1}}, Award: "a1", Coordinator: "coord", Lease: time.Second, Token: "tok"}
	h := HoldsFor(withHolds(context.Background(), wc, "w", as))
	err = h.Settle(context.Background(), "1", 0.1, false)
	if !errors.Is(err, ErrNoSettle) || errors.Is(err, ErrNoHold) || !strings.Contains(err.Error(), "settle") {
		t.Errorf("a settle nobody answered: %v; want ErrNoSettle", err)
	}
	if err := h.Release(context.Background(), "1"); !errors.Is(err, ErrNoSettle) {
		t.Errorf("a release nobody answered: %v; want ErrNoSettle", err)
	}
}
