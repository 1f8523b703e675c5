package envelope

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/fastjson"
)

// codecFrames are frames the hand-written codec must read and write as
// encoding/json does: the ones clients send, and every corner the fast
// path must either get right or leave to encoding/json.
var codecFrames = []string{
	`{"v":1,"type":"message.created","id":"4","src":"o","session":"S","dst":"w1","payload":{"text":"hi","kind":"user"}}`,
	`{"v":1,"type":"message.created","id":"1b4e28ba-2fa1-11d2-883f-0016d3cca427","ts":"2026-11-25T05:32:10.123Z","src":"bench","session":"s","seq":1000,"payload":{"text":"hello from the benchmark","kind":"user"}}`,
	`{"v":1,"type":"message.created","id":"r","ts":"2026-11-25T05:32:10.123Z","src":"bus","dst":"bench","session":"s","corr":"c","payload":{"message_id":"m","seq":3},"status":"ok"}`,
	`{"v":1,"type":"agent.add","id":"x","src":"bus","status":"error","error":{"code":"not_found","message":"no","detail":"d"}}`,
	`{"error":{"code":"a","detail":"x"},"error":{"code":"b"}}`,
	`{"error":null}`,
	` { "v" : 1 , "type" : "t" , "payload" : { "a" : [ 1 , 2.5e-3 , true , false , null , "x" ] } } `,
	"{\"v\":1,\t\"payload\":\n{\"a\":\r1}}\n",
	`{"V":1,"TYPE":"x","id":"\u00e9\ud800","src":"<&>","seq":-3,"error":{"code":"c","message":"m"}}`,
	`{"id":"a","ID":"b"}`, `{"Id":"a"}`, `{"ıd":"a"}`, `{"\u0069d":"a"}`, `{"idempotency_Key":"k"}`, "{\"idempotency_\u212aey\":\"k\"}",
	`{"id":"a","id":"b"}`, `{"id":"a","id":null}`, `{"v":2,"v":null}`, `{"seq":5,"seq":6}`,
	`{"payload":{"a":1},"payload":[2]}`, `{"payload":null}`, `{"payload":"x"}`, `{"payload":12}`, `{"payload":[1,2]}`,
	`{"payload":{}}`, `{"payload":{"t":"<b>&amp;</b>"}}`, "{\"payload\":{\"t\":\"\u2028\u2029\"}}", `{"payload":{"t":"\u2028"}}`,
	`{"payload":{"a":{"b":{"c":[[[]]]}}}}`, `{"payload":{"a":1,}}`, `{"payload":{"a" 1}}`, `{"payload":{"a":01}}`,
	`{"payload":{"a":-}}`, `{"payload":{"a":1.}}`, `{"payload":{"a":1e}}`, `{"payload":{"a":.5}}`, `{"payload":{"a":tru}}`,
	`{"payload":{"a":"\x"}}`, `{"payload":{"a":"\u12"}}`, `{"payload":{"a":"\u12G4"}}`, "{\"payload\":{\"a\":\"\x01\"}}",
	`{"v":1.5}`, `{"v":1e2}`, `{"v":-0}`, `{"v":"1"}`, `{"v":true}`, `{"v":1e400}`, `{"v":99999999999999999999}`,
	`{"seq":-9223372036854775808}`, `{"seq":9223372036854775808}`, `{"v":9223372036854775807}`,
	`{"type":"a\nb"}`, `{"type":"a\"b"}`, `{"type":"a\\b"}`, `{"type":"a\/b"}`, `{"type":"\u0000"}`,
	"{\"type\":\"caf\xc3\xa9\"}", "{\"type\":\"\xff\"}", "{\"type\":\"\xed\xa0\x80\"}", "{\"type\":\"\xef\xbf\xbd\"}",
	"{\"type\":\"a\x7fb\"}", "{\"type\":\"a\tb\"}",
	`{"type":1}`, `{"type":{}}`, `{"type":[]}`, `{"type":true}`, `{"type":null}`,
	`{"other":{"deep":[1,{"x":"y"}]},"type":"t"}`, `{"other":}`, `{"other":"\x"}`,
	`{}`, ` {} `, `{} x`, `{}{}`, `[]`, `null`, `""`, `1`, ``, ` `, `{`, `{"`, `{"v"`, `{"v":`, `{"v":1`, `{"v":1,`, `{"v":1,}`,
	`{,}`, `{"v":1 "type":"x"}`, `{"v"::1}`, `{'v':1}`,
	`{"status":"ok"}`, `{"status":"duplicate"}`, `{"status":"weird"}`, `{"type":"session.create","src":"bus"}`,
	`{"id":"` + strings.Repeat("x", 600) + `","src":"s","dst":"` + strings.Repeat("d", 10) + `"}`,
	`{"payload":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}`,
	`{"payload":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
}

// stdEncode is encoding/json's encoding of env, as the socket writes it
// (escapeHTML false, with a newline) or as json.Marshal does.
func stdEncode(env Envelope, escapeHTML bool) ([]byte, error) {
	if escapeHTML {
		return json.Marshal(env)
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(env); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// checkCodec holds the codec to encoding/json on one frame.
func checkCodec(t *testing.T, frame []byte) {
	t.Helper()
	var std Envelope
	stdErr := json.Unmarshal(frame, &std)

	var fast Envelope
	if decodeEnvelope(frame, &fast) {
		if stdErr != nil {
			t.Fatalf("frame %q: fast path decoded what encoding/json refuses (%v)", frame, stdErr)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("frame %q decodes differently:\nstd  %#v\nfast %#v", frame, std, fast)
		}
	}
	var got Envelope
	err := unmarshalEnvelope(frame, &got)
	if (err == nil) != (stdErr == nil) {
		t.Fatalf("frame %q: encoding/json error %v, unmarshalEnvelope error %v", frame, stdErr, err)
	}
	if err == nil && !reflect.DeepEqual(got, std) {
		t.Fatalf("frame %q decodes differently:\nstd %#v\ngot %#v", frame, std, got)
	}
	if stdErr == nil {
		checkEncode(t, std)
	}
}

// checkEncode holds appendEnvelope and marshalEnvelope to encoding/json.
func checkEncode(t *testing.T, env Envelope) {
	t.Helper()
	for _, html := range []bool{false, true} {
		want, wantErr := stdEncode(env, html)
		got, err := appendEnvelope([]byte("prefix"), &env, html)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%#v (escapeHTML %v): encoding/json error %v, appendEnvelope error %v", env, html, wantErr, err)
		}
		if err == nil && string(got) != "prefix"+string(want) {
			t.Fatalf("%#v (escapeHTML %v) encodes differently:\nstd  %s\nfast %s", env, html, want, got[len("prefix"):])
		}
	}
	want, wantErr := json.Marshal(env)
	got, err := marshalEnvelope(&env)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("%#v: json.Marshal error %v, marshalEnvelope error %v", env, wantErr, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%#v marshals differently:\nstd  %s\nfast %s", env, want, got)
	}
}

func TestCodecMatchesEncodingJSON(t *testing.T) {
	for _, f := range codecFrames {
		checkCodec(t, []byte(f))
	}
}

// TestCodecFastPath: the frames the bus and its clients exchange take the
// hand-written path, not the fall-back, and share one string allocation.
func TestCodecFastPath(t *testing.T) {
	for _, f := range codecFrames[:3] {
		var env Envelope
		if !decodeEnvelope([]byte(f), &env) {
			t.Errorf("frame %q left to encoding/json", f)
		}
	}
	reply := []byte(codecFrames[2])
	allocs := testing.AllocsPerRun(100, func() {
		var env Envelope
		decodeEnvelope(reply, &env)
	})
	if allocs > 2 {
		t.Errorf("decoding a reply allocates %v times, want at most 2 (strings, payload)", allocs)
	}
	// Escaped strings, error objects and case-folded keys are left to
	// encoding/json.
	for _, f := range []string{`{"type":"a\nb"}`, `{"error":{"code":"c","message":"m"}}`, `{"Type":"x"}`, `{"v":1.0}`} {
		var env Envelope
		if decodeEnvelope([]byte(f), &env) {
			t.Errorf("frame %q took the fast path", f)
		}
	}
}

// TestEncodeMatchesEncodingJSON covers strings no decoded frame holds
// (invalid UTF-8) and payloads json.Marshal would not write.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	texts := []string{"", "plain", "<script>&</script>", "quote\" back\\slash", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
		"café ☕ 𝄞", "\u2028 \u2029", "bad \xff utf8 \xe2\x80", "\xed\xa0\x80", "\xef\xbf\xbd", "\xe2\x80\xa8"}
	payloads := []string{"", `{}`, `{"a":"<&>"}`, "{\"a\":\"\u2028\"}", ` { "a" : 1 } `, `{"a":1}x`, `{"a":`, `null`, `[1, 2]`, `"s"`, `{"a":"\xff"}`}
	for _, s := range texts {
		for _, p := range payloads {
			env := Envelope{V: 1, Type: s, ID: s, TS: s, Src: s, Dst: s, Session: s, Seq: int64(len(s)) - 3,
				IdempotencyKey: s, Corr: s, Status: s}
			if p != "" {
				env.Payload = json.RawMessage(p)
			}
			checkEncode(t, env)
			env.Error = &Error{Code: s, Message: s, Detail: s}
			checkEncode(t, env)
		}
	}
	checkEncode(t, Envelope{})
	checkEncode(t, Envelope{Error: &Error{}, Payload: json.RawMessage{}})
}

// TestScannerMatchesValid: the scanner accepts exactly the valid JSON
// documents (shallower than its depth limit).
func TestScannerMatchesValid(t *testing.T) {
	docs := []string{`0`, `-0`, `-0.0e+1`, `1E-2`, `01`, `1.`, `.1`, `-`, `--1`, `+1`, `1e`, `1e+`, `"\u00e9"`, `"\uD834\uDD1E"`,
		`"\u"`, `"\q"`, "\"\x1f\"", "\"\x7f\"", "\"\xff\"", `[`, `]`, `[1,]`, `[,1]`, `{"a":1,"a":2}`, `{"a"}`, `{1:2}`,
		`true`, `truee`, `nul`, ` null `, "\t[\n]\r", `""`, `"`, `[[[[]]]]`, `{"a":[{"b":{}}]}`}
	for _, d := range docs {
		s := scanner{data: []byte(d)}
		if got, want := s.document(), json.Valid([]byte(d)); got != want {
			t.Errorf("scanner says %q valid = %v, encoding/json %v", d, got, want)
		}
	}
}

func FuzzEnvelopeCodec(f *testing.F) {
	for _, s := range codecFrames {
		if len(s) < 4096 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, frame string) {
		checkCodec(t, []byte(frame))
		s := scanner{data: []byte(frame)}
		if ok := s.document(); ok && !json.Valid([]byte(frame)) {
			t.Fatalf("scanner accepts invalid %q", frame)
		} else if !ok && json.Valid([]byte(frame)) && strings.Count(frame, "[")+strings.Count(frame, "{") < maxScanDepth {
			t.Fatalf("scanner refuses valid %q", frame)
		}
	})
}

func FuzzEnvelopeEncode(f *testing.F) {
	f.Add("message.created", "id", "src", "caf\xc3\xa9 <&> \u2028", `{"text":"hi"}`, int64(3), false)
	f.Add("", "", "", "\xff\x00\"\\", ` {"a" : [1, "\u2029"]} `, int64(-1), true)
	f.Add("t", "i", "s", "d", `{"a":`, int64(0), true)
	f.Fuzz(func(t *testing.T, typ, id, src, text, payload string, seq int64, withErr bool) {
		env := Envelope{V: len(text), Type: typ, ID: id, TS: text, Src: src, Dst: text, Session: id, Seq: seq,
			IdempotencyKey: typ, Corr: src, Status: text}
		if payload != "" {
			env.Payload = json.RawMessage(payload)
		}
		if withErr {
			env.Error = &Error{Code: typ, Message: text, Detail: src}
		}
		checkEncode(t, env)
	})
}

// TestMarshalAllocatesOnce: an event is encoded into one buffer sized for
// it.
func TestMarshalAllocatesOnce(t *testing.T) {
	var env Envelope
	if err := json.Unmarshal([]byte(codecFrames[2]), &env); err != nil {
		t.Fatal(err)
	}
	env.Seq, env.IdempotencyKey = 12345, "key"
	if allocs := testing.AllocsPerRun(100, func() { _, _ = marshalEnvelope(&env) }); allocs != 1 {
		t.Errorf("marshalEnvelope allocates %v times, want 1", allocs)
	}
}

// TestAppendersMatchMarshal holds the reply payloads that write themselves
// to json.Marshal.
func TestAppendersMatchMarshal(t *testing.T) {
	for _, s := range []string{"", "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "<&>", "\x00\"\\", "\xff", "\u2028é"} {
		for _, seq := range []int64{0, 1, -1, 1 << 62, -1 << 63} {
			checkAppender(t, MessageRecorded{MessageID: s, Seq: seq})
		}
	}
}

func checkAppender(t *testing.T, v jsonAppender) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.appendJSON(nil); !bytes.Equal(got, want) {
		t.Errorf("%#v: appendJSON %s, json.Marshal %s", v, got, want)
	}
	if got := v.appendJSON([]byte("x")); string(got) != "x"+string(want) {
		t.Errorf("%#v: appendJSON after x: %s", v, got)
	}
}

func FuzzAppenders(f *testing.F) {
	f.Add("id", int64(3))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		checkAppender(t, MessageRecorded{MessageID: s, Seq: n})
	})
}

// TestSpecialMask holds the eight-byte check to the byte-at-a-time one:
// the first byte that is not plain, for every byte value at every
// position, alone and before or after other special bytes.
func TestSpecialMask(t *testing.T) {
	first := func(b []byte, html bool) int {
		for i, c := range b {
			if !plainByte[c] && (html || (c != '<' && c != '>' && c != '&')) {
				return i
			}
		}
		return 8
	}
	check := func(b []byte, html bool) {
		t.Helper()
		got := 8
		if m := specialMask(load8(string(b), 0), html); m != 0 {
			got = bits.TrailingZeros64(m) / 8
		}
		if want := first(b, html); got != want {
			t.Fatalf("specialMask(%q, escapeHTML %v) finds byte %d, want %d", b, html, got, want)
		}
	}
	for _, html := range []bool{false, true} {
		for c := 0; c < 256; c++ {
			for pos := 0; pos < 8; pos++ {
				b := []byte("abcdefgh")
				b[pos] = byte(c)
				check(b, html)
				for _, other := range []byte{0, 0x1f, '"', '\\', '<', '&', 0x80, 0xff, 'z'} {
					for at := 0; at < 8; at++ {
						if at != pos {
							b2 := slices.Clone(b)
							b2[at] = other
							check(b2, html)
						}
					}
				}
			}
		}
	}
}

var messagePayloads = []string{
	`{"text":"hello from the benchmark","kind":"user"}`,
	`{"text":"line one\nline \"two\"\t\u00e9","kind":"reply","context_id":"c","owner_id":"o","parent_message_id":"p","task_id":"t","reply_to_action_id":"r","sender_name":"s"}`,
	`{"text":"caf` + "\xc3\xa9" + `"}`, `{"text":"` + "\xff" + `"}`, `{ "text" : "x" , "other" : {"a":[1,2]} }`,
	`{"text":"x","kind":null}`, `{"text":"x","text":null}`, `{"text":null,"text":"x"}`, `{"text":"x","text":" "}`,
	`{"text":" x "}`, `{"text":" "}`, `{"text":""}`, `{"text":"\n\t"}`, `{"text":"\u0020"}`, `{"text":"\u00a0"}`, `{"text":"` + "\u3000" + `"}`,
	`{"text":"\u0041"}`, `{"text":"\\n"}`, `{"text":"\/"}`, `{}`, `{"kind":"user"}`,
	`{"text":"x","kind":"User"}`, `{"text":"x","kind":"bogus"}`, `{"text":"x","kind":"us\u0065r"}`, `{"text":"x","kind":""}`,
	`{"Text":"x"}`, `{"TEXT":"x"}`, `{"text":"x","Kind":"bogus"}`, `{"t\u0065xt":"x"}`,
	`{"text":"x","payload_ref":"r"}`, `{"text":"x","payload_ref":null}`, `{"text":"x","Payload_Ref":{}}`,
	`{"text":1}`, `{"text":"x","kind":2}`, `{"text":"x","task_id":{}}`, `{"text":"x","sender_name":true}`,
	`{"text":"x",}`, `{"text":"x"} x`, `{"text":"x"`, `[]`, `"x"`, `null`,
}

// TestMessageOK: messageOK says yes only where the full decode and checks
// do, and says it for the payloads clients send.
func TestMessageOK(t *testing.T) {
	for _, p := range messagePayloads {
		checkMessageOK(t, []byte(p))
	}
	for _, p := range messagePayloads[:3] {
		if !messageOK([]byte(p)) {
			t.Errorf("messageOK(%s) = false", p)
		}
	}
}

func checkMessageOK(t *testing.T, payload []byte) {
	t.Helper()
	if !messageOK(payload) {
		return
	}
	// encoding/json itself, beside decode's fast codec.
	var p struct {
		Message
		PayloadRef json.RawMessage `json:"payload_ref"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		t.Fatalf("messageOK(%s) = true, but encoding/json: %v", payload, err)
	}
	if err := checkMessage(Envelope{Type: TypeMessageCreated, Payload: payload}); err != nil {
		t.Fatalf("messageOK(%s) = true, but checkMessage: %v", payload, err)
	}
}

func FuzzMessageOK(f *testing.F) {
	for _, p := range messagePayloads {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload string) { checkMessageOK(t, []byte(payload)) })
}

// BenchmarkCodec times the hand-written codec on the frames of one
// message.created round trip, beside encoding/json's reflecting codec
// through fastjson.
func BenchmarkCodec(b *testing.B) {
	req, reply := []byte(codecFrames[1]), []byte(codecFrames[2])
	var env Envelope
	if err := json.Unmarshal(reply, &env); err != nil {
		b.Fatal(err)
	}
	fast := func(data []byte) error {
		var e Envelope
		return unmarshalEnvelope(data, &e)
	}
	decoders := []struct {
		name  string
		frame []byte
		fn    func([]byte) error
	}{
		{"decode-request", req, fast},
		{"decode-reply", reply, fast},
		{"decode-reply-fastjson", reply, func(data []byte) error {
			var e Envelope
			return fastjson.Unmarshal(data, &e)
		}},
	}
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := d.fn(d.frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("encode-reply", func(b *testing.B) {
		b.ReportAllocs()
		w := bufio.NewWriter(io.Discard)
		for b.Loop() {
			if err := writeEnvelope(w, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-reply-fastjson", func(b *testing.B) {
		b.ReportAllocs()
		w := bufio.NewWriter(io.Discard)
		enc := fastjson.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			if err := enc.Encode(env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
