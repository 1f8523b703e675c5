package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

func TestDoctorChecksWithoutPrintingTheKey(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	srv := modeltest.NewServer(t)
	srv.SetModels("gpt-4.1", "gpt-4.1-mini")
	cfg := "model:\n  provider: openai\n  name: gpt-4.1\n  api_key_env: ACME_KEY\n  base_url: " + srv.OpenAIURL() + "\nbus:\n  url: ws://127.0.0.1:1\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, []string{"ACME_KEY=sk-secret-doctor"}, "", "--dir", dir, "doctor")
	if strings.Contains(r.out+r.err, "sk-secret-doctor") {
		t.Fatalf("doctor printed the key:\n%s%s", r.out, r.err)
	}
	for _, want := range []string{"ok   config", "ok   plugins", "ok   model    openai: " + srv.OpenAIURL() + " answers, key present in ACME_KEY (not shown)", "FAIL bus      no bus at ws://127.0.0.1:1"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.out)
		}
	}
	if r.code != exitFailed {
		t.Errorf("doctor with an unreachable bus = %d, want 1", r.code)
	}
	if len(srv.Requests()) != 0 {
		t.Error("doctor asked the model a question; listing its models costs nothing")
	}

	srv.SetModels("llama3.2", "qwen2.5")
	r = runBin(t, []string{"ACME_KEY=sk-secret-doctor"}, "", "--dir", dir, "doctor")
	if !strings.Contains(r.out, `FAIL model`) || !strings.Contains(r.out, `serves no model "gpt-4.1"`) || !strings.Contains(r.out, "fix: set model.name to one it serves, e.g. llama3.2, qwen2.5") {
		t.Errorf("doctor with a model the server lacks = %q, want a failed model check naming the ones it has", r.out)
	}

	cfg = "model:\n  provider: openai\n  name: gpt-4.1\n  api_key_env: ACME_KEY\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, nil, "", "--dir", dir, "doctor")
	if !strings.Contains(r.out, "FAIL model") || !strings.Contains(r.out, "fix: export ACME_KEY") {
		t.Errorf("doctor without the key = %q, want a failed model check saying what to export", r.out)
	}
}

// TestDoctorChecksEachModelEntry: every entry of models gets its own
// check, its key variable and its endpoint's answer, the keys unprinted.
func TestDoctorChecksEachModelEntry(t *testing.T) {
	dir := project(t, nil)
	srv := modeltest.NewServer(t)
	srv.SetModels("claude-test")
	cfg := "models:\n" +
		"  deep: {provider: anthropic, name: claude-test, api_key_env: DEEP_ACCESS, base_url: " + srv.URL + "}\n" +
		"  gone: {provider: anthropic, name: claude-gone, api_key_env: DEEP_ACCESS, base_url: " + srv.URL + "}\n" +
		"  flash: {provider: gemini, name: gemini-2.5-flash, api_key_env: FLASH_ACCESS}\n" +
		"  work: {provider: azure, name: gpt-4.1, api_key_env: DEEP_ACCESS, azure: {endpoint: \"" + srv.URL + "\"}}\n" +
		"agents:\n  loom: {model: deep, fallback: [flash]}\n"
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, []string{"DEEP_ACCESS=sk-secret-deep"}, "", "--dir", dir, "doctor")
	if strings.Contains(r.out+r.err, "sk-secret-deep") {
		t.Fatalf("doctor printed a key:\n%s%s", r.out, r.err)
	}
	for _, want := range []string{
		"ok   model deep anthropic: " + srv.URL + " answers, key present in DEEP_ACCESS (not shown)",
		`FAIL model gone anthropic: ` + srv.URL + ` answers, but serves no model "claude-gone"`, "fix: set models.gone.name to one it serves, e.g. claude-test",
		"FAIL model flash the gemini API key variable FLASH_ACCESS is empty", "fix: export FLASH_ACCESS",
		// Azure lists base models, not deployments: its answer is enough.
		"ok   model work azure: " + srv.URL + " answers, key present in DEEP_ACCESS (not shown)",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.out)
		}
	}
	if r.code != exitFailed {
		t.Errorf("doctor with failing entries = %d, want 1", r.code)
	}
}
