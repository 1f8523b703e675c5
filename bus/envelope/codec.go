package envelope

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weavehq/weave/internal/fastjson"
)

// The envelope codec of the socket path. Every frame in and out is an
// Envelope, so its encoding is written by hand instead of through a
// reflecting codec: appendEnvelope writes exactly the bytes encoding/json
// writes, and decodeEnvelope reads the frames the bus and its clients send
// (known keys spelled as on the wire, strings without escapes) itself and
// hands anything else to encoding/json's rules (fastjson), so what a frame
// decodes to never depends on which path read it. codec_test.go holds both
// to encoding/json.

// appendEnvelope appends env as encoding/json marshals it (with escapeHTML
// as json.Encoder.SetEscapeHTML; json.Marshal escapes). A payload that is
// not valid JSON is an error, as it is for encoding/json.
func appendEnvelope(dst []byte, env *Envelope, escapeHTML bool) ([]byte, error) {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(env.V), 10)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, env.Type, escapeHTML)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, env.ID, escapeHTML)
	dst = append(dst, `,"ts":`...)
	dst = appendString(dst, env.TS, escapeHTML)
	dst = append(dst, `,"src":`...)
	dst = appendString(dst, env.Src, escapeHTML)
	if env.Dst != "" {
		dst = append(dst, `,"dst":`...)
		dst = appendString(dst, env.Dst, escapeHTML)
	}
	if env.Session != "" {
		dst = append(dst, `,"session":`...)
		dst = appendString(dst, env.Session, escapeHTML)
	}
	if env.Seq != 0 {
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendInt(dst, env.Seq, 10)
	}
	if env.IdempotencyKey != "" {
		dst = append(dst, `,"idempotency_key":`...)
		dst = appendString(dst, env.IdempotencyKey, escapeHTML)
	}
	if env.Corr != "" {
		dst = append(dst, `,"corr":`...)
		dst = appendString(dst, env.Corr, escapeHTML)
	}
	if len(env.Payload) > 0 {
		dst = append(dst, `,"payload":`...)
		var err error
		if dst, err = appendRaw(dst, env.Payload, escapeHTML); err != nil {
			return dst, err
		}
	}
	if env.Status != "" {
		dst = append(dst, `,"status":`...)
		dst = appendString(dst, env.Status, escapeHTML)
	}
	if e := env.Error; e != nil {
		dst = append(dst, `,"error":{"code":`...)
		dst = appendString(dst, e.Code, escapeHTML)
		dst = append(dst, `,"message":`...)
		dst = appendString(dst, e.Message, escapeHTML)
		if e.Detail != "" {
			dst = append(dst, `,"detail":`...)
			dst = appendString(dst, e.Detail, escapeHTML)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// marshalEnvelope returns env as json.Marshal does.
func marshalEnvelope(env *Envelope) ([]byte, error) {
	out, err := appendEnvelope(make([]byte, 0, envelopeSize(env)), env, true)
	if err != nil {
		return nil, encodingError(env)
	}
	return out, nil
}

// encodingError is encoding/json's error for env, word for word. It
// encodes a copy, so that env need not live on the heap.
func encodingError(env *Envelope) error {
	cp := *env
	_, err := json.Marshal(&cp)
	return err
}

// envelopeSize is env's encoded length when no string needs escaping, to
// allocate once.
func envelopeSize(env *Envelope) int {
	n := len(`{"v":0,"type":"","id":"","ts":"","src":""}`) + 20 + len(env.Type) + len(env.ID) + len(env.TS) + len(env.Src)
	opt := func(v, key string) {
		if v != "" {
			n += len(`,"":""`) + len(key) + len(v)
		}
	}
	opt(env.Dst, "dst")
	opt(env.Session, "session")
	opt(env.IdempotencyKey, "idempotency_key")
	opt(env.Corr, "corr")
	opt(env.Status, "status")
	if env.Seq != 0 {
		n += len(`,"seq":`) + 20
	}
	if len(env.Payload) > 0 {
		n += len(`,"payload":`) + len(env.Payload)
	}
	if e := env.Error; e != nil {
		n += len(`,"error":{"code":"","message":"","detail":""}`) + len(e.Code) + len(e.Message) + len(e.Detail)
	}
	return n
}

// appendString appends s as a JSON string, as encoding/json writes it:
// invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are always escaped, and
// <, > and & are when escapeHTML.
func appendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Skip to the first byte that is not plain.
			if m := specialMask(load8(s, i), escapeHTML); m == 0 {
				i += 8
				continue
			} else {
				i += bits.TrailingZeros64(m) / 8
			}
		}
		b := s[i]
		if plainByte[b] || (!escapeHTML && (b == '<' || b == '>' || b == '&')) {
			i++
			continue
		}
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendRaw appends raw as encoding/json writes a json.RawMessage: checked,
// compacted, and HTML-escaped when escapeHTML. A raw value that is already
// compact and needs no escaping (what json.Marshal makes) is copied as it
// is; anything else goes through encoding/json.
func appendRaw(dst, raw []byte, escapeHTML bool) ([]byte, error) {
	s := scanner{data: raw}
	if s.document() && !s.space && (!escapeHTML || !s.html) {
		return append(dst, raw...), nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return dst, err
	}
	if !escapeHTML {
		return append(dst, c.Bytes()...), nil
	}
	var h bytes.Buffer
	json.HTMLEscape(&h, c.Bytes())
	return append(dst, h.Bytes()...), nil
}

// scanner checks JSON text. A false result means "not known to be valid":
// input deeper than maxScanDepth is not judged here, so callers fall back
// to encoding/json, which has the final word.
type scanner struct {
	data  []byte
	i     int
	depth int
	// space: whitespace between tokens; html: a byte that HTML escaping
	// rewrites (<, >, &, or the lead byte of U+2028/U+2029) in a string.
	space, html bool
	// escaped and high describe the last string: it has a backslash
	// escape; it has a byte of 0x80 or more.
	escaped, high bool
	// keyFrom and keyTo bound the inside of the last key.
	keyFrom, keyTo int
}

const maxScanDepth = 1000

// document scans one value with optional whitespace around it and nothing
// else.
func (s *scanner) document() bool {
	s.ws()
	if !s.value() {
		return false
	}
	s.ws()
	return s.i == len(s.data)
}

func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.space = true
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value() bool {
	if s.i >= len(s.data) {
		return false
	}
	switch c := s.data[s.i]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		return s.str()
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) object() bool {
	if s.depth++; s.depth > maxScanDepth {
		return false
	}
	for done, ok := s.open('{', '}'); !done; {
		if !ok || !s.key() || !s.value() {
			return false
		}
		done, ok = s.more('}')
	}
	s.depth--
	return true
}

func (s *scanner) array() bool {
	if s.depth++; s.depth > maxScanDepth {
		return false
	}
	for done, ok := s.open('[', ']'); !done; {
		if !ok || !s.value() {
			return false
		}
		done, ok = s.more(']')
	}
	s.depth--
	return true
}

// open steps into an object or array at s.i (after leading white space
// for an object): done when it is empty, ok when it opens as it should.
func (s *scanner) open(opener, closer byte) (done, ok bool) {
	if opener == '{' {
		s.ws()
	}
	if s.i >= len(s.data) || s.data[s.i] != opener {
		return false, false
	}
	s.i++
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == closer {
		s.i++
		return true, true
	}
	return false, true
}

// key scans a member's key and colon, up to its value: the inside of
// the key is s.data[s.keyFrom:s.keyTo], and escaped and high describe it.
func (s *scanner) key() bool {
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return false
	}
	s.keyFrom = s.i + 1
	if !s.str() {
		return false
	}
	s.keyTo = s.i - 1
	s.ws()
	if s.i >= len(s.data) || s.data[s.i] != ':' {
		return false
	}
	s.i++
	s.ws()
	return s.i < len(s.data)
}

// stringOrNull scans a value that decodes into a Go string: a string,
// whose inside is s.data[from:to], or null (isNull), which leaves the Go
// string as it was. ok is false for anything else: a type error.
func (s *scanner) stringOrNull() (from, to int, isNull, ok bool) {
	switch s.data[s.i] {
	case '"':
		from = s.i + 1
		ok = s.str()
		return from, s.i - 1, false, ok
	case 'n':
		s.escaped, s.high = false, false
		return 0, 0, true, s.literal("null")
	}
	return 0, 0, false, false
}

// more steps past a member's value: done at the closer, ok unless
// something other than a comma or the closer follows.
func (s *scanner) more(closer byte) (done, ok bool) {
	s.ws()
	if s.i >= len(s.data) {
		return false, false
	}
	switch s.data[s.i] {
	case ',':
		s.i++
		s.ws()
		return false, true
	case closer:
		s.i++
		return true, true
	}
	return false, false
}

// str scans a string from its opening quote.
func (s *scanner) str() bool {
	s.escaped, s.high = false, false
	d := s.data
	i := s.i + 1
	for i < len(d) {
		if i+8 <= len(d) {
			// Skip to the first byte that is not plain.
			if m := specialMask(binary.LittleEndian.Uint64(d[i:]), true); m == 0 {
				i += 8
				continue
			} else {
				i += bits.TrailingZeros64(m) / 8
			}
		}
		c := d[i]
		if plainByte[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			s.i = i + 1
			return true
		case c == '\\':
			s.escaped = true
			if i+1 >= len(d) {
				return false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return false
				}
				for _, h := range d[i+2 : i+6] {
					if !isHex(h) {
						return false
					}
				}
				i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		case c == '<' || c == '>' || c == '&':
			s.html = true
			i++
		default: // c >= utf8.RuneSelf
			s.high = true
			if c == 0xE2 {
				s.html = true
			}
			i++
		}
	}
	return false
}

// plainByte marks the bytes a string holds as they are, with no escaping
// on either side: printable ASCII but for the quote, the backslash and
// what HTML escaping rewrites.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Strings are checked eight bytes at a time (SWAR). specialMask returns,
// for x, eight bytes of a string read little-endian, a mask whose lowest
// set bit is the high bit of the first byte that is not a plainByte (when
// !escapeHTML, <, > and & count as plain), and 0 when there is none. Each
// term is the classic has-zero-byte (has-less-than) test, whose lowest set
// bit is exact: a borrow only runs upward from a byte that matches.
func specialMask(x uint64, escapeHTML bool) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := x^(ones*'"'), x^(ones*'\\')
	m := (x-ones*0x20)&^x | // a byte under 0x20
		x | // a byte of 0x80 or more
		(q-ones)&^q | (b-ones)&^b
	if escapeHTML {
		lt, gt, amp := x^(ones*'<'), x^(ones*'>'), x^(ones*'&')
		m |= (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp
	}
	return m & highs
}

// load8 reads the eight bytes of s at i, little-endian.
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (s *scanner) number() bool {
	d, i := s.data, s.i
	if d[i] == '-' {
		i++
	}
	switch {
	case i >= len(d):
		return false
	case d[i] == '0':
		i++
	case isDigit(d[i]):
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return false
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return false
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	s.i = i
	return true
}

func (s *scanner) literal(lit string) bool {
	if len(s.data)-s.i < len(lit) || string(s.data[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// unmarshalEnvelope decodes one frame into env as json.Unmarshal does.
func unmarshalEnvelope(data []byte, env *Envelope) error {
	if decodeEnvelope(data, env) {
		return nil
	}
	// A copy, so that env itself need not live on the heap.
	var slow Envelope
	err := fastjson.Unmarshal(data, &slow)
	*env = slow
	return err
}

// The string fields of Envelope that decodeEnvelope reads.
const (
	fType = iota
	fID
	fTS
	fSrc
	fDst
	fSession
	fIdempotencyKey
	fCorr
	fStatus
	nStrings
	// Not strings.
	fV = iota
	fSeq
	fPayload
	fUnknown
	fBail // a key only encoding/json's rules may decode
)

// fieldOf names the field key decodes into. A key that is not one of the
// wire names but matches one case-insensitively, has escapes or is not
// ASCII (encoding/json folds case, Unicode included), and the error
// object (merged field by field when repeated) are left to encoding/json.
func fieldOf(key []byte, escaped, high bool) int {
	if escaped || high {
		return fBail
	}
	switch string(key) {
	case "v":
		return fV
	case "type":
		return fType
	case "id":
		return fID
	case "ts":
		return fTS
	case "src":
		return fSrc
	case "dst":
		return fDst
	case "session":
		return fSession
	case "seq":
		return fSeq
	case "idempotency_key":
		return fIdempotencyKey
	case "corr":
		return fCorr
	case "payload":
		return fPayload
	case "status":
		return fStatus
	case "error":
		return fBail
	}
	for _, name := range envelopeKeys {
		if len(key) == len(name) && bytes.EqualFold(key, []byte(name)) {
			return fBail
		}
	}
	return fUnknown
}

var envelopeKeys = [...]string{"v", "type", "id", "ts", "src", "dst", "session", "seq", "idempotency_key", "corr", "payload", "status", "error"}

// maxPacked bounds the string fields that share one allocation: a large
// field gets its own, so that keeping one small field does not keep it.
const maxPacked = 512

// decodeEnvelope decodes data into env, a zero Envelope, when data is an
// envelope encoding/json would decode without trouble and that needs none
// of its slower rules. It reports false, with env in any state, otherwise.
func decodeEnvelope(data []byte, env *Envelope) bool {
	var spans [nStrings]struct{ from, to int }
	var set [nStrings]bool
	var payload []byte
	s := scanner{data: data}
	for done, ok := s.open('{', '}'); !done; {
		if !ok || !s.key() {
			return false
		}
		switch f := fieldOf(data[s.keyFrom:s.keyTo], s.escaped, s.high); {
		case f == fBail:
			return false
		case f < nStrings:
			from, to, isNull, ok := s.stringOrNull()
			if !ok || s.escaped || (s.high && !utf8.Valid(data[from:to])) {
				return false
			}
			if !isNull {
				spans[f].from, spans[f].to, set[f] = from, to, true
			}
		case f == fV || f == fSeq:
			if data[s.i] == 'n' {
				if !s.literal("null") {
					return false
				}
				break
			}
			from := s.i
			if !s.number() {
				return false
			}
			// encoding/json takes integers only, in range.
			n, isInt := parseInt(data[from:s.i])
			if !isInt {
				return false
			}
			if f == fSeq {
				env.Seq = n
			} else if int64(int(n)) != n {
				return false
			} else {
				env.V = int(n)
			}
		case f == fPayload:
			from := s.i
			if !s.value() {
				return false
			}
			payload = data[from:s.i]
		default:
			if !s.value() {
				return false
			}
		}
		done, ok = s.more('}')
	}
	s.ws()
	if s.i != len(data) {
		return false
	}

	if payload != nil {
		env.Payload = append(json.RawMessage(nil), payload...)
	}
	// The type and status are nearly always one of a few known words,
	// which need no allocation; the rest share one where they are small.
	if set[fType] {
		env.Type = knownWord(data[spans[fType].from:spans[fType].to])
		set[fType] = false
	}
	if set[fStatus] {
		env.Status = knownWord(data[spans[fStatus].from:spans[fStatus].to])
		set[fStatus] = false
	}
	total := 0
	for f, ok := range set {
		if ok {
			total += spans[f].to - spans[f].from
		}
	}
	var packed string
	if total <= maxPacked {
		var b strings.Builder
		b.Grow(total)
		for f, ok := range set {
			if ok {
				b.Write(data[spans[f].from:spans[f].to])
			}
		}
		packed = b.String()
	}
	at := 0
	for f, ok := range set {
		if !ok {
			continue
		}
		var v string
		if n := spans[f].to - spans[f].from; total <= maxPacked {
			v = packed[at : at+n]
			at += n
		} else {
			v = string(data[spans[f].from:spans[f].to])
		}
		switch f {
		case fID:
			env.ID = v
		case fTS:
			env.TS = v
		case fSrc:
			env.Src = v
		case fDst:
			env.Dst = v
		case fSession:
			env.Session = v
		case fIdempotencyKey:
			env.IdempotencyKey = v
		case fCorr:
			env.Corr = v
		}
	}
	return true
}

// parseInt parses a JSON number that is an integer of at most 18 digits,
// which cannot overflow; longer ones and fractions are left to
// encoding/json.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// knownWord returns b as a string, without allocating for the command
// and event types, statuses and src the bus sends.
func knownWord(b []byte) string {
	switch string(b) {
	case TypeSessionCreate:
		return TypeSessionCreate
	case TypeSessionList:
		return TypeSessionList
	case TypeSessionClose:
		return TypeSessionClose
	case TypeAgentAdd:
		return TypeAgentAdd
	case TypeAgentRemove:
		return TypeAgentRemove
	case TypeAgentList:
		return TypeAgentList
	case TypeAgentUpdate:
		return TypeAgentUpdate
	case TypeMessageCreated:
		return TypeMessageCreated
	case TypeActionSubmit:
		return TypeActionSubmit
	case TypeActionResult:
		return TypeActionResult
	case TypeTaskUpdated:
		return TypeTaskUpdated
	case TypeTaskDone:
		return TypeTaskDone
	case TypeEventsHistory:
		return TypeEventsHistory
	case TypeEventsStream:
		return TypeEventsStream
	case TypeRelaySubmit:
		return TypeRelaySubmit
	case TypeRelayDone:
		return TypeRelayDone
	case TypeSessionCreated:
		return TypeSessionCreated
	case TypeSessionClosed:
		return TypeSessionClosed
	case TypeAgentAdded:
		return TypeAgentAdded
	case TypeAgentRemoved:
		return TypeAgentRemoved
	case TypeAgentUpdated:
		return TypeAgentUpdated
	case TypeEventsRecord:
		return TypeEventsRecord
	case TypeError:
		return TypeError
	case StatusOK:
		return StatusOK
	case StatusDuplicate:
		return StatusDuplicate
	}
	return string(b)
}

// writeEnvelope writes env and a newline to w, as a json.Encoder with
// SetEscapeHTML(false) does.
func writeEnvelope(w *bufio.Writer, env *Envelope) error {
	buf, err := appendEnvelope(w.AvailableBuffer(), env, false)
	if err != nil {
		return encodingError(env)
	}
	_, err = w.Write(append(buf, '\n'))
	return err
}

// jsonAppender is a reply payload that writes itself, with the bytes
// json.Marshal would write: the replies to the most frequent commands.
type jsonAppender interface {
	appendJSON(dst []byte) []byte
}

func (m MessageRecorded) appendJSON(dst []byte) []byte {
	if dst == nil {
		dst = make([]byte, 0, len(`{"message_id":"","seq":}`)+len(m.MessageID)+20)
	}
	dst = append(dst, `{"message_id":`...)
	dst = appendString(dst, m.MessageID, true)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, m.Seq, 10)
	return append(dst, '}')
}

// messageKeys are the keys a message.created payload decodes: Message's
// fields and payload_ref.
var messageKeys = [...]string{"text", "kind", "context_id", "owner_id", "parent_message_id", "task_id",
	"reply_to_action_id", "sender_name", "payload_ref"}

// messageOK reports whether payload is a message.created payload that
// decoding and messageCreated's checks accept: an object whose text is
// not blank and whose kind is empty or known, without payload_ref. It
// decodes nothing. False means "not known": the full decode and checks
// then run, and say what is wrong if anything is.
func messageOK(payload []byte) bool {
	var text, kind []byte
	var textEscaped bool
	s := scanner{data: payload}
	for done, ok := s.open('{', '}'); !done; {
		if !ok || !s.key() || s.escaped || s.high {
			return false
		}
		key := payload[s.keyFrom:s.keyTo]
		known := false
		for _, k := range messageKeys {
			if string(key) == k {
				known = true
				break
			}
			if len(key) == len(k) && bytes.EqualFold(key, []byte(k)) {
				return false // encoding/json's case folding
			}
		}
		switch {
		case !known:
			if !s.value() {
				return false
			}
		case string(key) == "payload_ref":
			return false
		default:
			from, to, isNull, ok := s.stringOrNull()
			switch {
			case !ok:
				return false
			case isNull:
			case string(key) == "text":
				text, textEscaped = payload[from:to], s.escaped
			case string(key) == "kind":
				if s.escaped {
					return false
				}
				kind = payload[from:to]
			}
		}
		done, ok = s.more('}')
	}
	s.ws()
	return s.i == len(payload) && !blank(text, textEscaped) && (len(kind) == 0 || validMessageKind(string(kind)))
}

// blank reports whether raw, the inside of a JSON string, may decode to
// nothing but white space; false means it surely does not.
func blank(raw []byte, escaped bool) bool {
	if !escaped {
		return len(bytes.TrimSpace(raw)) == 0
	}
	// A printable ASCII character outside an escape is never space.
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '\\':
			if raw[i+1] == 'u' {
				i += 5
			} else {
				i++
			}
		case c > ' ' && c < utf8.RuneSelf:
			return false
		}
	}
	return true
}
