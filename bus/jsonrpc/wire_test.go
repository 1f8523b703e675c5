package jsonrpc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
)

// FuzzParseIncoming: any bytes give exactly one classification, and never
// a panic.
func FuzzParseIncoming(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"sendMessage","params":{"topic":"a","payload":{"type":"x"}}}`,
		`{"jsonrpc":"2.0","id":"s1","result":{"processed":true}}`,
		`{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":null,"result":1,"error":{}}`,
		`[]`, `42`, `null`, `"x"`, `{`, ``, `{"id":[1]}`, `{"jsonrpc":"2.0","method":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, ok := parseIncoming(raw)
		if !ok {
			if json.Valid(raw) {
				t.Fatalf("parseIncoming(%q) = parse error for valid JSON", raw)
			}
			return
		}
		kinds := 0
		if in.invalid != nil {
			kinds++
		}
		if in.response {
			kinds++
		}
		if in.method != "" && in.invalid == nil {
			kinds++
		}
		if kinds != 1 {
			t.Fatalf("parseIncoming(%q) = %+v: want exactly one of invalid, response, request", raw, in)
		}
		if in.id != nil && !validID(in.id) {
			t.Fatalf("parseIncoming(%q) kept invalid id %s", raw, in.id)
		}
	})
}

func TestAckResult(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		in   AckResult
		want bool
	}{
		{"processed", AckResult{Processed: &yes}, true},
		{"processed false wins over success", AckResult{Processed: &no, Success: &yes}, false},
		{"bare sendMessage success", AckResult{Success: &yes}, true},
		{"nothing", AckResult{}, false},
	}
	for _, tt := range tests {
		if got := tt.in.ack("x").Processed; got != tt.want {
			t.Errorf("%s: ack().Processed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestPlainString: the shortcut reads what the decoder reads, and leaves
// anything it cannot read plainly to the decoder.
func TestPlainString(t *testing.T) {
	for _, raw := range []string{`"sendMessage"`, `""`, `"a\"b"`, `"caf\u00e9"`, `"café"`, "\"a\tb\"", `"x`, `x"`, `1`, `"`} {
		got, ok := plainString(json.RawMessage(raw))
		var want string
		err := json.Unmarshal([]byte(raw), &want)
		switch {
		case ok && (err != nil || got != want):
			t.Errorf("plainString(%s) = %q, but the decoder reads %q, %v", raw, got, want, err)
		case !ok && err == nil && !strings.ContainsAny(raw, "\\\t\u00e9"):
			t.Errorf("plainString(%s) refused a plain string", raw)
		}
	}
}

// FuzzCodec holds the fast codec of the hot path to the standard library:
// frames and sendMessage params decode to the same values, or fail, with
// both, and the values encode to the same bytes.
func FuzzCodec(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"sendMessage","params":{"topic":"a:b","payload":{"type":"x","n":[1,{"<":"&"}]},"headers":{"z":"1","a":"2","m":"\u00e9"},"idempotencyKey":"k"},"id":"c1"}`,
		`{"jsonrpc":"2.0","id":1,"result":{"success":true,"acks":[{"subscriber":"s","processed":true}]}}`,
		`{"JSONRPC":"2.0","Method":"x","ID":null}`, `{"id":"\ud800"}`, "{\"id\":\"\xff\"}", `{"params":[1]}`, `{"topic":5}`, `[]`, `null`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame string) {
		same := func(what string, std, fast any, stdErr, fastErr error) bool {
			t.Helper()
			if (stdErr == nil) != (fastErr == nil) {
				t.Fatalf("%s %q: standard library error %v, fast codec error %v", what, frame, stdErr, fastErr)
			}
			if stdErr == nil && !reflect.DeepEqual(std, fast) {
				t.Fatalf("%s %q decodes differently:\nstd  %+v\nfast %+v", what, frame, std, fast)
			}
			return stdErr == nil
		}
		var se, fe envelope
		same("frame", &se, &fe, json.Unmarshal([]byte(frame), &se), gojson.Unmarshal([]byte(frame), &fe))
		var sp, fp sendParams
		if same("params", &sp, &fp, json.Unmarshal([]byte(frame), &sp), gojson.Unmarshal([]byte(frame), &fp)) {
			a, aerr := json.Marshal(resultResponse(json.RawMessage(`1`), sp))
			b, berr := gojson.Marshal(resultResponse(json.RawMessage(`1`), sp))
			if aerr == nil && (berr != nil || string(a) != string(b)) {
				t.Fatalf("encodings differ:\nstd  %s\nfast %s (%v)", a, b, berr)
			}
		}
	})
}
