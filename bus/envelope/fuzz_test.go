package envelope

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
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

// FuzzCodec checks the fast codec on the socket path against the standard
// library: a frame decodes to the same envelope, or fails, with both; an
// envelope encodes to the same bytes.
func FuzzCodec(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"type":"message.created","id":"4","src":"o","session":"S","dst":"w1","payload":{"text":"hi","kind":"user"}}`,
		`{"V":1,"TYPE":"x","id":"\u00e9\ud800","src":"<&>","seq":-3,"error":{"code":"c","message":"m"}}`,
		`{"v":1.5}`, `{"v":1,"v":2}`, `{"payload":[1,2]}`, `{"payload":"x"}`, `{"id":"a\x00"}`, "{\"id\":\"\xff\"}", `null`, `[]`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame string) {
		var std, fast Envelope
		stdErr := json.Unmarshal([]byte(frame), &std)
		fastErr := gojson.Unmarshal([]byte(frame), &fast)
		if (stdErr == nil) != (fastErr == nil) {
			t.Fatalf("frame %q: standard library error %v, fast codec error %v", frame, stdErr, fastErr)
		}
		if stdErr != nil {
			return
		}
		if !reflect.DeepEqual(std, fast) {
			t.Fatalf("frame %q decodes differently:\nstd  %+v\nfast %+v", frame, std, fast)
		}
		var a, b bytes.Buffer
		se := json.NewEncoder(&a)
		se.SetEscapeHTML(false)
		fe := gojson.NewEncoder(&b)
		fe.SetEscapeHTML(false)
		if err := se.Encode(std); err != nil {
			return // an invalid RawMessage payload: never sent by the broker
		}
		if err := fe.Encode(std); err != nil {
			t.Fatalf("fast codec cannot encode %+v: %v", std, err)
		}
		if a.String() != b.String() {
			t.Fatalf("encodings differ:\nstd  %s\nfast %s", a.String(), b.String())
		}
	})
}
