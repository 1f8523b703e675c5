package collab

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
)

// Loom's collaboration test vectors, as data under testdata/loom.

func readVector(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile("testdata/loom/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestLoomContractNetOneBroadcastTopic(t *testing.T) {
	var v struct {
		ThreadID  string `json:"thread_id"`
		MaxAwards int    `json:"max_awards"`
		Bidders   []struct {
			ID    string  `json:"id"`
			Topic string  `json:"topic"`
			Score float64 `json:"score"`
		} `json:"bidders"`
		WantWinners  []string `json:"want_winners"`
		WantReceived string   `json:"want_received"`
	}
	readVector(t, "contract_net_one_topic.json", &v)
	w := newWorld(t)
	ctx := context.Background()
	coordinator := w.agent(t, "coordinator", Options{})
	proposed := make(chan string, len(v.Bidders))
	for _, b := range v.Bidders {
		agent := w.agent(t, b.ID, Options{})
		w.listen(t, b.Topic, func(e Event) {
			if e.Type != TypeCFP {
				return
			}
			if _, err := agent.Propose(ctx, e, b.Score, nil); err != nil {
				t.Errorf("Propose() = %v", err)
			}
			proposed <- b.ID
		})
	}
	observer := w.listen(t, "thread."+v.ThreadID+".broadcast", nil)
	done := make(chan []Event, 1)
	go func() {
		got, err := coordinator.ContractNet(ctx, v.ThreadID, json.RawMessage(`{"task":"translate"}`), 10*time.Second, v.MaxAwards)
		if err != nil {
			t.Errorf("ContractNet() = %v", err)
		}
		done <- got
	}()
	for range v.Bidders {
		bustest.Recv(t, "every bidder to hear the cfp and propose", proposed)
	}
	w.clock.WaitForTimer(t, 10*time.Second)
	w.clock.Advance(10 * time.Second)
	winners := bustest.Recv(t, "ContractNet to close its window", done)
	var got []string
	for _, e := range winners {
		got = append(got, e.Metadata[KeySender])
	}
	if diff := cmp.Diff(v.WantWinners, got); diff != "" {
		t.Errorf("winners (-want +got):\n%s", diff)
	}
	if s := observer.waitType(t, TypeSummary); s.Metadata["received"] != v.WantReceived {
		t.Errorf("summary received = %q, want %q", s.Metadata["received"], v.WantReceived)
	}
}

func TestLoomAnswersKeepTraceContext(t *testing.T) {
	var v struct {
		Request      Event             `json:"request"`
		WantMetadata map[string]string `json:"want_metadata"`
	}
	readVector(t, "reply_keeps_trace.json", &v)
	for _, typ := range []string{TypeReply, TypeProposal} {
		t.Run(typ, func(t *testing.T) {
			w := newWorld(t)
			ctx := context.Background()
			worker := w.agent(t, "worker", Options{})
			answers := w.listen(t, v.Request.Metadata[KeyReplyTo], nil)
			var err error
			if typ == TypeReply {
				_, err = worker.Reply(ctx, v.Request, json.RawMessage(`{"a":"pong"}`))
			} else {
				_, err = worker.Propose(ctx, v.Request, 1, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := answers.waitType(t, typ).Metadata
			delete(got, KeyTS)
			delete(got, KeyScore)
			if diff := cmp.Diff(v.WantMetadata, got); diff != "" {
				t.Errorf("%s metadata (-want +got):\n%s", typ, diff)
			}
		})
	}
}

func TestLoomFanoutCountsProposals(t *testing.T) {
	var v struct {
		Workers []struct {
			ID     string `json:"id"`
			Topic  string `json:"topic"`
			Answer string `json:"answer"`
		} `json:"workers"`
		FirstK       int    `json:"first_k"`
		WantReceived string `json:"want_received"`
	}
	readVector(t, "fanout_counts_proposals.json", &v)
	w := newWorld(t)
	ctx := context.Background()
	client := w.agent(t, "client", Options{})
	var topics []string
	for _, wk := range v.Workers {
		agent := w.agent(t, wk.ID, Options{})
		topics = append(topics, wk.Topic)
		w.listen(t, wk.Topic, func(e Event) {
			var err error
			if wk.Answer == TypeProposal {
				_, err = agent.Propose(ctx, e, 1, nil)
			} else {
				_, err = agent.Reply(ctx, e, nil)
			}
			if err != nil {
				t.Errorf("%s answering: %v", wk.ID, err)
			}
		})
	}
	summaries := w.listen(t, "thread.*", nil)
	got, err := client.FanoutFanin(ctx, topics, nil, v.FirstK, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != v.FirstK {
		t.Errorf("FanoutFanin collected %d answers, want %d", len(got), v.FirstK)
	}
	if s := summaries.waitType(t, TypeSummary); s.Metadata["received"] != v.WantReceived {
		t.Errorf("summary received = %q, want %q", s.Metadata["received"], v.WantReceived)
	}
}

func TestNewTakesSenderForm(t *testing.T) {
	w := newWorld(t)
	for _, id := range []string{"client", "agent.client"} {
		c, err := New(context.Background(), w.bus, id, Options{Clock: w.clock,
			Inbox: func(context.Context, Event) (bus.Ack, error) { return bus.Ack{Processed: true}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Sender(); got != "agent.client" {
			t.Errorf("New(%q).Sender() = %q, want agent.client", id, got)
		}
		m, _ := Event{Type: TypeReply, Metadata: map[string]string{}}.Message("agent.client.replies")
		res, err := w.bus.Request(context.Background(), m)
		if err != nil || !res.Processed() {
			t.Errorf("New(%q): a message to agent.client.replies = %+v, %v; want it in the mailbox", id, res, err)
		}
		c.Close()
	}
}
