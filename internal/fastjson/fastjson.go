// Package fastjson is the JSON codec of the bus faces' hot paths:
// github.com/goccy/go-json, several times faster than encoding/json on the
// small objects the faces exchange, with encoding/json's results. Decoding
// falls back to the standard library when the fast codec fails, so errors
// (messages and *json.SyntaxError) are the standard library's. The FuzzCodec
// targets of bus/envelope and bus/jsonrpc hold the two codecs to the same
// values and bytes.
package fastjson

import (
	"encoding/json"
	"io"
	"reflect"

	gojson "github.com/goccy/go-json"
)

// Unmarshal decodes data into v, a non-nil pointer, as json.Unmarshal does.
func Unmarshal(data []byte, v any) error {
	if gojson.Unmarshal(data, v) == nil {
		return nil
	}
	// Start over from the zero value: the fast codec may have filled part
	// of v before failing.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	return json.Unmarshal(data, v)
}

// Marshal encodes v as json.Marshal does.
func Marshal(v any) ([]byte, error) { return gojson.Marshal(v) }

// Encoder writes values as newline-terminated JSON, as json.Encoder does.
type Encoder = gojson.Encoder

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return gojson.NewEncoder(w) }
