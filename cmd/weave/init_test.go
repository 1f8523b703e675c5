package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitWithoutSurprises(t *testing.T) {
	dir := t.TempDir()
	xdg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdg, "weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "weave", "config.yaml"), []byte("runbook:\n  retries: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_CONFIG_HOME=" + xdg}
	if r := runBin(t, env, "", "--dir", dir, "init"); r.code != 0 || !strings.Contains(r.out, "created .weave/config.yaml") {
		t.Fatalf("init = %d %q %q", r.code, r.out, r.err)
	}

	// The project's config overrides nothing: defaults stay defaults and the
	// user's setting applies.
	var cfg struct {
		Runbook map[string]any    `json:"runbook"`
		Sources map[string]string `json:"sources"`
	}
	r := runBin(t, env, "", "--dir", dir, "config", "show", "--json", "--sources")
	if err := jsonUnmarshal(r.out, &cfg); err != nil {
		t.Fatalf("config show --json: %v\n%s", err, r.out)
	}
	for key, src := range cfg.Sources {
		want := "default"
		if key == "runbook.retries" {
			want = "user"
		}
		if !strings.HasPrefix(src, want) {
			t.Errorf("after init, %s comes from %q, want %s", key, src, want)
		}
	}
	if cfg.Runbook["retries"] != 5.0 {
		t.Errorf("after init, runbook.retries = %v, want the user's 5", cfg.Runbook["retries"])
	}

	var val validationView
	runJSON(t, &val, "--dir", dir, "plan", "validate", "hello-weave", "--json")
	if !val.Valid || len(val.Warnings) != 0 {
		t.Errorf("the sample plan validates with %v %v, want no warning", val.Errors, val.Warnings)
	}
	ignore, _ := os.ReadFile(filepath.Join(dir, ".weave", ".gitignore"))
	if !strings.Contains(string(ignore), "scratch/") {
		t.Errorf(".weave/.gitignore = %q, want it to cover what the sample plan writes (scratch/)", ignore)
	}

	if r := runBin(t, env, "", "--dir", dir, "init"); r.code != 0 || !strings.Contains(r.out, "already a weave project") {
		t.Errorf("init in a project = %d %q, want it to say so", r.code, r.out)
	}
	missing := filepath.Join(dir, "nope")
	for _, args := range [][]string{{"init"}, {"status"}} {
		r := runBin(t, env, "", append([]string{"--dir", missing}, args...)...)
		if r.code != exitFailed || !strings.Contains(r.err, missing+": the directory does not exist") {
			t.Errorf("weave --dir MISSING %v = %d %q, want 1 saying the directory does not exist", args, r.code, r.err)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("init created the missing --dir")
	}
	if r := runBin(t, env, "", "plugin", "new", "hook", "x", "--help"); !strings.Contains(r.out, "--out") {
		t.Errorf("plugin new --help lacks --out:\n%s", r.out)
	}
}
