package natsbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/natsbus"
)

func newBus(t testing.TB, url string, opts bus.Options) *natsbus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	b, err := natsbus.New(ctx, url, opts)
	if err != nil {
		t.Fatalf("natsbus.New(%s) = %v", url, err)
	}
	return b
}

func TestConformance(t *testing.T) {
	bustest.Run(t, func(t *testing.T, opts bus.Options) bus.Bus {
		// One server per subtest: streams and buckets start empty.
		ns := bustest.StartNATS(t)
		return newBus(t, ns.URL(), opts)
	})
}

func TestEncodeTopic(t *testing.T) {
	tests := []struct{ topic, want string }{
		{"agent:w-1", "agent=3Aw-1"},
		{"thread.t1.reply", "thread=2Et1=2Ereply"},
		{"a>b*c d", "a=3Eb=2Ac=20d"},
		{"x=y", "x=3Dy"},
		{"files/a_b", "files=2Fa_b"},
		{"café", "caf=C3=A9"},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			got := natsbus.EncodeTopic(tt.topic)
			if got != tt.want {
				t.Errorf("EncodeTopic(%q) = %q, want %q", tt.topic, got, tt.want)
			}
			back, err := natsbus.DecodeTopic(got)
			if err != nil || back != tt.topic {
				t.Errorf("DecodeTopic(%q) = %q, %v, want %q, nil", got, back, err, tt.topic)
			}
		})
	}
	for _, bad := range []string{"a=", "a=3", "a=ZZ"} {
		if _, err := natsbus.DecodeTopic(bad); err == nil {
			t.Errorf("DecodeTopic(%q) = nil error, want an error", bad)
		}
	}
}

func FuzzEncodeTopic(f *testing.F) {
	for _, s := range []string{"agent:w-1", "a.b.c", "=3A", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, topic string) {
		enc := natsbus.EncodeTopic(topic)
		for i := 0; i < len(enc); i++ {
			if c := enc[i]; c == '.' || c == '*' || c == '>' || c <= ' ' || c >= 0x7f {
				t.Fatalf("EncodeTopic(%q) = %q holds %q", topic, enc, c)
			}
		}
		if back, err := natsbus.DecodeTopic(enc); err != nil || back != topic {
			t.Fatalf("DecodeTopic(EncodeTopic(%q)) = %q, %v", topic, back, err)
		}
	})
}

func payload(fields ...any) json.RawMessage {
	p := map[string]any{"type": "test"}
	for i := 0; i+1 < len(fields); i += 2 {
		p[fields[i].(string)] = fields[i+1]
	}
	raw, _ := json.Marshal(p)
	return raw
}

// TestAcrossProcesses runs two buses on one server, as two processes would.
func TestAcrossProcesses(t *testing.T) {
	ns := bustest.StartNATS(t)
	opts := bus.Options{Retained: []string{"loop:current"}, AppendOnly: []string{"loop:anchor"}}
	a := newBus(t, ns.URL(), opts)
	defer a.Close()
	b := newBus(t, ns.URL(), opts)
	defer b.Close()
	ctx := context.Background()

	t.Run("publish reaches the other process in order", func(t *testing.T) {
		rec := bustest.Processed()
		s, err := b.Subscribe(ctx, "ev:*", rec.Handle, bus.SubscribeOptions{Name: "b-ev"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Unsubscribe()
		const n = 200
		for i := range n {
			if _, err := a.Publish(ctx, bus.Message{Topic: "ev:" + strconv.Itoa(i%3), Payload: payload("n", i)}); err != nil {
				t.Fatal(err)
			}
		}
		got := rec.WaitN(t, n)
		for i, m := range got {
			var p struct{ N int }
			_ = json.Unmarshal(m.Payload, &p)
			if p.N != i {
				t.Fatalf("message %d has n=%d, want %d", i, p.N, i)
			}
		}
	})

	t.Run("request walks local then remote", func(t *testing.T) {
		remote := bustest.NewRecorder(bus.Ack{Processed: true, Message: "remote"})
		s, err := b.Subscribe(ctx, "job:*", remote.Handle, bus.SubscribeOptions{Name: "remote"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Unsubscribe()
		local := bustest.NewRecorder(bus.Ack{Processed: false, Message: "local"})
		ls, err := a.Subscribe(ctx, "job:1", local.Handle, bus.SubscribeOptions{Name: "local"})
		if err != nil {
			t.Fatal(err)
		}
		defer ls.Unsubscribe()
		var res bus.Result
		bustest.WaitFor(t, "the remote subscription to be seen", func() bool {
			res, err = a.Request(ctx, bus.Message{Topic: "job:1", Payload: payload()})
			return err == nil && len(res.Acks) == 2
		})
		want := []bus.Ack{{Subscriber: "local", Message: "local"}, {Subscriber: "remote", Processed: true, Message: "remote"}}
		if diff := cmp.Diff(want, res.Acks); diff != "" {
			t.Errorf("acks (-want +got):\n%s", diff)
		}
		if !res.Stopped || res.Delivered != 2 {
			t.Errorf("Request = %+v, want Stopped after 2 deliveries", res)
		}
		if err := s.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
		bustest.WaitFor(t, "the remote subscription to leave the registry", func() bool {
			res, err = a.Request(ctx, bus.Message{Topic: "job:1", Payload: payload()})
			return err == nil && len(res.Acks) == 1
		})
	})

	t.Run("retained and append-only are shared", func(t *testing.T) {
		if _, err := a.Publish(ctx, bus.Message{Topic: "loop:current", Payload: payload("n", 7)}); err != nil {
			t.Fatal(err)
		}
		m, ok, err := b.Retained(ctx, "loop:current")
		if err != nil || !ok {
			t.Fatalf("Retained on the other process = %v, %v, want true, nil", ok, err)
		}
		if string(m.Payload) != string(payload("n", 7)) {
			t.Errorf("Retained payload = %s, want %s", m.Payload, payload("n", 7))
		}
		r1, _ := a.Publish(ctx, bus.Message{Topic: "loop:anchor", Payload: payload(), IdempotencyKey: "k"})
		r2, _ := b.Publish(ctx, bus.Message{Topic: "loop:anchor", Payload: payload(), IdempotencyKey: "k"})
		if r1.Offset != 1 || r1.Duplicate || !r2.Duplicate {
			t.Errorf("keyed publish from both processes = %+v then %+v, want offset 1 then a duplicate", r1, r2)
		}
	})

	t.Run("dead letters are shared", func(t *testing.T) {
		s, err := a.Subscribe(ctx, "dl:*", func(context.Context, bus.Message) (bus.Ack, error) {
			return bus.Ack{}, fmt.Errorf("broken")
		}, bus.SubscribeOptions{Name: "broken"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Request(ctx, bus.Message{Topic: "dl:1", Payload: payload()})
		if err != nil || !res.DeadLettered {
			t.Fatalf("Request = %+v, %v, want a dead letter", res, err)
		}
		_ = s.Unsubscribe()
		var dls []bus.DeadLetter
		bustest.WaitFor(t, "the dead letter to show on the other process", func() bool {
			dls, _ = b.DeadLetters(ctx)
			return len(dls) == 1
		})
		heir := bustest.Processed()
		hs, err := b.Subscribe(ctx, "dl:1", heir.Handle, bus.SubscribeOptions{Name: "heir"})
		if err != nil {
			t.Fatal(err)
		}
		defer hs.Unsubscribe()
		got, err := b.ReplayDeadLetter(ctx, dls[0].ID)
		if err != nil || len(got.Acks) != 1 || got.Acks[0].Subscriber != "heir" {
			t.Errorf("ReplayDeadLetter on the other process = %+v, %v, want delivered to heir", got, err)
		}
		if after, _ := b.DeadLetters(ctx); len(after) != 0 {
			t.Errorf("DeadLetters after replay = %+v, want none", after)
		}
	})
}

func TestNewFailsWithoutServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := natsbus.New(ctx, "nats://127.0.0.1:1", bus.Options{}); err == nil {
		t.Errorf("New(no server) = nil error, want an error")
	}
}

// TestDeadProcessSkipped: a registry entry left by a process that died
// without Close costs nothing and is cleaned up.
func TestDeadProcessSkipped(t *testing.T) {
	ns := bustest.StartNATS(t)
	a := newBus(t, ns.URL(), bus.Options{})
	defer a.Close()
	ctx := context.Background()
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "WEAVE_SUBS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "deadprocess.1", []byte("job:*")); err != nil {
		t.Fatal(err)
	}
	local := bustest.NewRecorder(bus.Ack{})
	if _, err := a.Subscribe(ctx, "job:1", local.Handle, bus.SubscribeOptions{Name: "local"}); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, "the dead process's entry to be cleaned up", func() bool {
		res, err := a.Request(ctx, bus.Message{Topic: "job:1", Payload: payload()})
		if err != nil || len(res.Acks) != 1 {
			t.Fatalf("Request = %+v, %v, want only the local ack", res, err)
		}
		_, err = kv.Get(ctx, "deadprocess.1")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
}

// TestStoredDeadLettersBounded checks that the server itself keeps only the
// newest MaxDeadLetters: a process that never lists its dead letters still
// leaves no more than that behind.
func TestStoredDeadLettersBounded(t *testing.T) {
	ns := bustest.StartNATS(t)
	ctx := context.Background()
	a := newBus(t, ns.URL(), bus.Options{MaxDeadLetters: 2, MaxAttempts: 1})
	if _, err := a.Subscribe(ctx, "mail:*", func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{}, errors.New("mailbox full")
	}, bus.SubscribeOptions{Name: "mailer"}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 1; i <= 4; i++ {
		res, err := a.Request(ctx, bus.Message{Topic: "mail:" + strconv.Itoa(i), Payload: payload()})
		if err != nil || !res.DeadLettered {
			t.Fatalf("Request(mail:%d) = %+v, %v, want dead-lettered", i, res, err)
		}
		ids = append(ids, res.MessageID)
	}
	if err := a.Close(); err != nil { // writes the dead letters to the server
		t.Fatal(err)
	}

	b := newBus(t, ns.URL(), bus.Options{MaxDeadLetters: 100})
	defer b.Close()
	dls, err := b.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, dl := range dls {
		got[dl.Message.ID] = true
	}
	if diff := cmp.Diff(map[string]bool{ids[2]: true, ids[3]: true}, got); diff != "" {
		t.Errorf("stored dead letters after 4 with a limit of 2 (-want +got):\n%s", diff)
	}
}
