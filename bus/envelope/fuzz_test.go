package envelope

import (
	"context"
	"strings"
	"testing"
)

// FuzzFrame feeds arbitrary frames to a broker with a populated session:
// every frame gets exactly one reply and nothing panics.
func FuzzFrame(f *testing.F) {
	seeds := []string{
		`{"v":1,"type":"session.create","id":"1","src":"x","payload":{"name":"n"}}`,
		`{"v":1,"type":"agent.add","id":"2","src":"w9","session":"S","payload":{"id":"w9"}}`,
		`{"v":1,"type":"agent.update","id":"3","src":"w1","session":"S","payload":{"id":"w1","name":"z"}}`,
		`{"v":1,"type":"message.created","id":"4","src":"o","session":"S","dst":"w1","payload":{"text":"hi","kind":"user"}}`,
		`{"v":1,"type":"action.submit","id":"5","src":"owner","session":"S","payload":{"group_id":"g","context":{"context_id":"c"},"actions":[{"type":"message","dst":"w1","action_id":"a","action_index":0,"kind":"reply","text":"t","reply_to_action_id":"a1"},{"type":"control","dst":"w2","action_id":"b","action_index":1,"command":"new"}]}}`,
		`{"v":1,"type":"action.result","id":"6","src":"w1","session":"S","payload":{"group_id":"g1","action_id":"a1","action_index":0,"status":"completed","data":{}}}`,
		`{"v":1,"type":"task.updated","id":"7","src":"w1","session":"S","payload":{"task_id":"t","status":"done"}}`,
		`{"v":1,"type":"events.history","id":"8","src":"x","session":"S","payload":{"limit":2}}`,
		`{"v":1,"type":"events.stream","id":"9","src":"x","session":"S","payload":{"follow":false,"after":1}}`,
		`{"v":1,"type":"agent.remove","id":"10","src":"x","session":"S","payload":{"id":"w1"}}`,
		`{"v":1,"type":"session.close","id":"11","src":"x","session":"S"}`,
		`{"v":1,"type":"action.submit","id":"12","src":"o","session":"S","payload":{"group_id":"g","actions":[{"action_index":null}]}}`,
		`{"v":1,"type":"message.created","id":"13","src":"o","session":"S","payload":null}`,
		`[]`, `null`, `{"v":1e400}`, `{"payload":"x"}`, "",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame string) {
		fx := newFixture(t)
		frame = strings.ReplaceAll(frame, `"S"`, `"`+fx.s+`"`)
		env, err := parseEnvelope([]byte(frame))
		var replies []Envelope
		if err != nil {
			replies = []Envelope{fx.b.errorReply(env, err)}
		} else {
			replies = fx.b.Handle(context.Background(), env)
		}
		if len(replies) != 1 {
			t.Fatalf("frame %q got %d replies", frame, len(replies))
		}
		if r := replies[0]; r.Status == StatusError && (r.Error == nil || r.Error.Message == "") {
			t.Fatalf("frame %q: error reply without a message: %+v", frame, r)
		}
	})
}
