package plugins

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Text that is not UTF-8 (a plan block with a Latin-1 byte, the output of a
// command that prints raw bytes) crosses the protocol without being changed
// or failing:
//
//   - Free-form JSON values (tool arguments, event data, decision args)
//     carry every string that is not valid UTF-8 twice: as JSON text, where
//     encoding/json turns the bad bytes into U+FFFD, and byte-exact in
//     base64 under the reserved key rawStringsKey, a map from JSON pointer
//     to bytes. Decoding puts the exact bytes back, so a shell block runs
//     exactly as written. A peer that does not know the key sees only the
//     U+FFFD form.
//   - Protobuf string fields must hold UTF-8 (gRPC refuses to send one that
//     does not), so bad bytes in them are replaced by U+FFFD when a message
//     is built: a task title or a command's output is shown, not refused.

// rawStringsKey is the reserved key of a JSON object that holds its strings
// that are not UTF-8, byte-exact.
const rawStringsKey = "\x00weave_raw_strings"

// collectRaw records, under their JSON pointers, the strings in v that are
// not valid UTF-8.
func collectRaw(v any, ptr string, raw map[string]any) {
	switch t := v.(type) {
	case string:
		if !utf8.ValidString(t) {
			raw[ptr] = base64.StdEncoding.EncodeToString([]byte(t))
		}
	case map[string]any:
		for k, e := range t {
			collectRaw(e, ptr+"/"+escapePointer(k), raw)
		}
	case []any:
		for i, e := range t {
			collectRaw(e, ptr+"/"+strconv.Itoa(i), raw)
		}
	case []string:
		for i, e := range t {
			collectRaw(e, ptr+"/"+strconv.Itoa(i), raw)
		}
	}
}

// restoreRaw puts the exact strings recorded under rawStringsKey back into
// m and removes the key.
func restoreRaw(m map[string]any) {
	raw, ok := m[rawStringsKey].(map[string]any)
	delete(m, rawStringsKey)
	if !ok {
		return
	}
	for ptr, enc := range raw {
		s, ok := enc.(string)
		if !ok {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			continue
		}
		setPointer(m, ptr, string(b))
	}
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func unescapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
}

// setPointer sets the string at ptr in v when ptr names an existing string
// there; anything else is left alone.
func setPointer(v any, ptr, s string) {
	if !strings.HasPrefix(ptr, "/") {
		return
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		last := i == len(parts)-1
		switch t := v.(type) {
		case map[string]any:
			k := unescapePointer(p)
			if last {
				if _, ok := t[k].(string); ok {
					t[k] = s
				}
				return
			}
			v = t[k]
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(t) {
				return
			}
			if last {
				if _, ok := t[n].(string); ok {
					t[n] = s
				}
				return
			}
			v = t[n]
		default:
			return
		}
	}
}

// validUTF8 replaces the bytes that are not UTF-8 in every string field of
// m, and of the messages it holds, with U+FFFD, and returns m.
func validUTF8[M proto.Message](m M) M {
	scrub(m.ProtoReflect())
	return m
}

func scrub(m protoreflect.Message) {
	if !m.IsValid() {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				switch fd.Kind() {
				case protoreflect.StringKind:
					if s := l.Get(i).String(); !utf8.ValidString(s) {
						l.Set(i, protoreflect.ValueOfString(strings.ToValidUTF8(s, "\uFFFD")))
					}
				case protoreflect.MessageKind, protoreflect.GroupKind:
					scrub(l.Get(i).Message())
				}
			}
		case fd.IsMap():
			// No map of this protocol holds free text.
		case fd.Kind() == protoreflect.StringKind:
			if s := v.String(); !utf8.ValidString(s) {
				m.Set(fd, protoreflect.ValueOfString(strings.ToValidUTF8(s, "\uFFFD")))
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			scrub(v.Message())
		}
		return true
	})
}
