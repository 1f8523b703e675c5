package pid1

import (
	"reflect"
	"testing"
)

func TestSpecRoundTrip(t *testing.T) {
	for _, s := range []Spec{
		{},
		{Probe: true},
		{Root: "/p r/oj", Layers: []Layer{{Rel: ".", Writable: true}, {Rel: ".weave"}, {Rel: ".weave/plans", Writable: true}},
			Writable: []string{"/home/u/.cache/go-build"}, Network: true, Path: "/bin/bash",
			Argv: []string{"bash", "-c", "echo 'a\tb'\n"}, Env: []string{"PATH=/bin", "EMPTY="}, Dir: "/p r/oj"},
	} {
		got, err := Decode(s.Encode())
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)): %v", s, err)
		}
		if !reflect.DeepEqual(normal(got), normal(s)) {
			t.Errorf("round trip of %+v = %+v", s, got)
		}
	}
	for _, bad := range []string{"", "x", "/r\x00zz\x00", "/r\x005\x00"} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) = nil error, want malformed", bad)
		}
	}
}

// normal makes empty lists nil, as Decode's zero-length lists compare.
func normal(s Spec) Spec {
	if len(s.Writable) == 0 {
		s.Writable = nil
	}
	if len(s.Argv) == 0 {
		s.Argv = nil
	}
	if len(s.Env) == 0 {
		s.Env = nil
	}
	if len(s.Layers) == 0 {
		s.Layers = nil
	}
	return s
}
