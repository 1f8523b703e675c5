package natsbus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/weavehq/weave/bus"
)

// EncodeTopic maps a bus topic to a single NATS subject token. Letters,
// digits, '-' and '_' are kept; every other byte (':', '.', '/', '*', '>',
// spaces, non-ASCII bytes, '=' itself) becomes '=' followed by two upper-case
// hex digits. So "agent:w-1" is "agent=3Aw-1" and "thread.t1.reply" is
// "thread=2Et1=2Ereply". The result never contains a NATS token separator
// or wildcard, and DecodeTopic gives the topic back.
func EncodeTopic(topic string) string {
	var sb strings.Builder
	sb.Grow(len(topic) + 8)
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('=')
		sb.WriteByte(hexDigits[c>>4])
		sb.WriteByte(hexDigits[c&0x0f])
	}
	return sb.String()
}

// DecodeTopic reverses EncodeTopic.
func DecodeTopic(token string) (string, error) {
	if !strings.Contains(token, "=") {
		return token, nil
	}
	out := make([]byte, 0, len(token))
	for i := 0; i < len(token); i++ {
		c := token[i]
		if c != '=' {
			out = append(out, c)
			continue
		}
		if i+2 >= len(token) {
			return "", fmt.Errorf("decode subject token %q: '=' at %d is not followed by two hex digits", token, i)
		}
		var b [1]byte
		if _, err := hex.Decode(b[:], []byte(token[i+1:i+3])); err != nil {
			return "", fmt.Errorf("decode subject token %q at %d: %w", token, i, err)
		}
		out = append(out, b[0])
		i += 2
	}
	return string(out), nil
}

// Subjects, stream and bucket names. Everything lives under "weave." so a
// NATS account can be shared with other applications.
const (
	pubPrefix      = "weave.pub."
	reqPrefix      = "weave.req."
	retainedPrefix = "weave.retained."
	logPrefix      = "weave.log."

	retainedStream = "WEAVE_RETAINED"
	logStreamPre   = "WEAVE_LOG_"
	subsBucket     = "WEAVE_SUBS"
	dlqBucket      = "WEAVE_DLQ"
)

// openClass is the class token of the topics every peer may use; the
// protected topics (bus.ProtectedPrefixes) have their own, so that NATS
// permissions can grant them apart: weave.pub.agent.>, weave.req.hook.*.
const openClass = "open"

// topicClass is the class token of topic's subjects: "agent", "hook" or
// "system" for the protected topics, "open" for the rest.
func topicClass(topic string) string {
	for _, p := range bus.ProtectedPrefixes() {
		if strings.HasPrefix(topic, p) {
			return strings.TrimSuffix(p, ":")
		}
	}
	return openClass
}

// classes are every class token, open first.
func classes() []string {
	out := []string{openClass}
	for _, p := range bus.ProtectedPrefixes() {
		out = append(out, strings.TrimSuffix(p, ":"))
	}
	return out
}

// pubSubject is where a publish on topic goes to the other processes:
// weave.pub.<class>.<encoded topic>.
func pubSubject(topic string) string {
	return pubPrefix + topicClass(topic) + "." + EncodeTopic(topic)
}

// reqSubject is where a request on topic goes to the bus process
// instance: weave.req.<class>.<instance>.
func reqSubject(topic, instance string) string {
	return reqPrefix + topicClass(topic) + "." + instance
}

// logStream names the stream of one append-only topic. Stream names cannot
// hold every topic character and are bounded in length, so the name is a
// hash; the stream's subject carries the encoded topic.
func logStream(topic string) string {
	sum := sha256.Sum256([]byte(topic))
	return logStreamPre + hex.EncodeToString(sum[:16])
}

// dedupID is the Nats-Msg-Id of a stored message: the idempotency key scoped
// to its topic when there is one, else a nonce of the Publish call so that
// the call's own retries are stored once.
func dedupID(topic, key, nonce string) string {
	if key == "" {
		return "n:" + nonce
	}
	sum := sha256.Sum256([]byte(topic + "\x00" + key))
	return "k:" + hex.EncodeToString(sum[:16])
}
