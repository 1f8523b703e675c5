package envelope

import (
	"strings"
	"testing"
)

// TestHTTPRelayTurns drives a relay through POST /v1/envelopes with the
// frames codex-weave's TUI sends: a wait action, a second turn under the
// same relay_id, and the submit carrying done, whose relay.done reaches the
// owner on its own SSE stream (addressed to it, from the bus).
func TestHTTPRelayTurns(t *testing.T) {
	b := newTestBroker(t, Options{})
	srv := httpServer(t, b)
	s := newSession(t, b, "")
	addAgent(t, b, s, "agent-a", "owner")
	addAgent(t, b, s, "agent-b", "worker")
	frame := func(id, payload string) []byte {
		return []byte(`{"v":1,"type":"relay.submit","id":"` + id + `","ts":"2026-01-02T03:04:06.000Z","src":"agent-a","session":"` + s + `","payload":` + payload + `}`)
	}
	accepted := func(id, payload string) RelayAccepted {
		t.Helper()
		status, r := post(t, srv, frame(id, payload))
		if status != 200 || r.Status != StatusOK {
			t.Fatalf("relay.submit %s: HTTP %d, reply %+v", id, status, r)
		}
		return decodeAs[RelayAccepted](t, r)
	}
	first := accepted("h1", `{"actions":[{"dst":"worker","expects_reply":true,"plan_step_id":"step_1","text":"write it","type":"message"},{"plan_step_id":"step_1","targets":["worker"],"type":"wait"}],"relay_id":"relay-h","targets":["agent-b"]}`)
	tb := first.Targets["agent-b"]
	if first.Status != "accepted" || tb == nil || tb.GroupID != "relay-h" || len(tb.Actions) != 2 ||
		tb.Actions[0].Type != ActionMessage || tb.Actions[1].Type != ActionWait || tb.Actions[1].PlanStepID != "step_1" {
		t.Fatalf("first turn accepted = %+v, targets[agent-b] = %+v; want the message and the wait under agent-b", first, tb)
	}
	// The target finishes the only delivered action: the relay stays open
	// for the owner's next turn (the TUI keeps it until relay.done).
	_, r := post(t, srv, []byte(`{"v":1,"type":"action.result","id":"hr","ts":"2026-01-02T03:04:06.500Z","src":"agent-b","session":"`+s+
		`","payload":{"group_id":"relay-h","action_id":"relay-h/0","action_index":0,"status":"completed"}}`))
	mustOK(t, r)
	second := accepted("h2", `{"actions":[{"command":"new","dst":"agent-b","plan_step_id":"step_2","type":"control"}],"relay_id":"relay-h","targets":["agent-b"]}`)
	if second.Status != "accepted" || second.Targets["agent-b"] == nil || second.Targets["agent-b"].Actions[0].Command != "new" {
		t.Fatalf("second turn under the same relay_id = %+v; want it accepted as a new turn", second)
	}
	ch, _ := openSSE(t, srv.URL+"/v1/sessions/"+s+"/events?after=0&agent=agent-a", "")
	accepted("h3", `{"done":{"relay_id":"relay-h","summary":"written"},"relay_id":"relay-h"}`)
	for {
		ev := nextSSE(t, ch)
		if ev.Env.Type != TypeRelayDone {
			continue
		}
		p := decodeAs[RelayDone](t, ev.Env)
		if ev.Env.Src != BusSrc || ev.Env.Dst != "agent-a" || p.RelayID != "relay-h" || p.Summary != "written" {
			t.Fatalf("relay.done = %+v %+v; want one from the bus to agent-a with the summary", ev.Env, p)
		}
		break
	}
	// The ended relay takes no more actions.
	_, r = post(t, srv, frame("h4", `{"actions":[{"dst":"agent-b","text":"more","type":"message"}],"relay_id":"relay-h"}`))
	if r.Status != StatusError || r.Error == nil || r.Error.Code != CodeConflict || !strings.Contains(r.Error.Message, "ended") {
		t.Fatalf("submit to an ended relay = %+v; want a conflict saying it ended", r)
	}
}
