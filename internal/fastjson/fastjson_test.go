package fastjson

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestErrorsAreTheStandardLibrarys: callers classify errors with the
// standard library's types, so a failed decode must return those.
func TestErrorsAreTheStandardLibrarys(t *testing.T) {
	var v struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	var syn *json.SyntaxError
	if err := Unmarshal([]byte(`{"a":`), &v); !errors.As(err, &syn) {
		t.Errorf("bad JSON: error %T %v, want *json.SyntaxError", err, err)
	}
	var typ *json.UnmarshalTypeError
	if err := Unmarshal([]byte(`{"b":"kept?","a":"x"}`), &v); !errors.As(err, &typ) {
		t.Errorf("wrong type: error %T %v, want *json.UnmarshalTypeError", err, err)
	}
	if err := Unmarshal([]byte(`{"a":1,"b":"x"}`), &v); err != nil || v.A != 1 || v.B != "x" {
		t.Errorf("Unmarshal = %+v, %v; want {1 x}", v, err)
	}
	out, err := Marshal(v)
	if err != nil || string(out) != `{"a":1,"b":"x"}` {
		t.Errorf("Marshal = %s, %v", out, err)
	}
}
