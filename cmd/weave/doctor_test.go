package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctorChecksWithoutPrintingTheKey(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	cfg := "model:\n  provider: openai\n  name: gpt-4.1\n  api_key_env: ACME_KEY\nbus:\n  url: ws://127.0.0.1:1\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, []string{"ACME_KEY=sk-secret-doctor"}, "", "--dir", dir, "doctor")
	if strings.Contains(r.out+r.err, "sk-secret-doctor") {
		t.Fatalf("doctor printed the key:\n%s%s", r.out, r.err)
	}
	for _, want := range []string{"ok   config", "ok   plugins", "ok   model    openai: key present in ACME_KEY", "FAIL bus      no bus at ws://127.0.0.1:1"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.out)
		}
	}
	if r.code != exitFailed {
		t.Errorf("doctor with an unreachable bus = %d, want 1", r.code)
	}
	r = runBin(t, nil, "", "--dir", dir, "doctor")
	if !strings.Contains(r.out, "FAIL model") || !strings.Contains(r.out, "fix: export ACME_KEY") {
		t.Errorf("doctor without the key = %q, want a failed model check saying what to export", r.out)
	}
}
