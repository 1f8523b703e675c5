package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	v := runBin(t, nil, "", "version")
	if v.code != 0 {
		t.Fatalf("weave version = %d, stderr %q", v.code, v.err)
	}
	want := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	if !strings.HasPrefix(v.out, "weave ") || !strings.Contains(v.out, want) {
		t.Errorf("weave version printed %q, want the version and %q", v.out, want)
	}
	if f := runBin(t, nil, "", "--version"); f.code != 0 || f.out != v.out {
		t.Errorf("weave --version = %d %q, want %q as weave version prints", f.code, f.out, v.out)
	}
	j := runBin(t, nil, "", "version", "--json")
	var got buildInfo
	if err := json.Unmarshal([]byte(j.out), &got); err != nil {
		t.Fatalf("version --json printed %q: %v", j.out, err)
	}
	if got.GoVersion != runtime.Version() || got.Version == "" {
		t.Errorf("version --json = %+v, want go_version %s and a version", got, runtime.Version())
	}
}

// A release build stamps its version, commit and date with -ldflags -X, as
// scripts/release.sh does.
func TestVersionOfAReleaseBuild(t *testing.T) {
	ld := "-X main.version=v1.2.3 -X main.commit=0123abcd -X main.date=2026-11-24T12:00:00Z"
	bin, err := buildBinary(t.TempDir(), "weave", "-ldflags", ld)
	if err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, bin, nil, "", "--version")
	for _, want := range []string{"weave v1.2.3\n", "commit: 0123abcd\n", "date:   2026-11-24T12:00:00Z\n", "go:     " + runtime.Version()} {
		if !strings.Contains(r.out, want) {
			t.Errorf("weave --version of a release build printed %q, want it to have %q", r.out, want)
		}
	}
}
